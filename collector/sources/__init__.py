"""Where call records come from besides live spans: Claude Code transcripts (``claude_code``) and
the SIMULATED workload (``simulator``); both deliver through :mod:`.delivery` (append only the
calls not stored yet, or re-send them as OTLP)."""

from toolwatch.collector.sources.claude_code import import_transcripts
from toolwatch.collector.sources.delivery import DeliveryError, append_new_calls, send_otlp
from toolwatch.collector.sources.simulator import SimulationConfig, simulate

__all__ = [
    "DeliveryError",
    "SimulationConfig",
    "append_new_calls",
    "import_transcripts",
    "send_otlp",
    "simulate",
]
