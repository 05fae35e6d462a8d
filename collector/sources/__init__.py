"""Where call records come from besides live spans: Claude Code transcripts (``claude_code``) and
the SIMULATED workload (``simulator``); both deliver through :mod:`.delivery` (append only the
calls not stored yet, or re-send them as OTLP). The names below load on
first use (:mod:`toolwatch.lazy`), so a command's options from one source need no other."""

from __future__ import annotations

from typing import TYPE_CHECKING

from toolwatch.lazy import lazy_names

if TYPE_CHECKING:
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
__getattr__ = lazy_names(
    __name__,
    {
        "DeliveryError": "toolwatch.collector.sources.delivery",
        "SimulationConfig": "toolwatch.collector.sources.simulator",
        "append_new_calls": "toolwatch.collector.sources.delivery",
        "import_transcripts": "toolwatch.collector.sources.claude_code",
        "send_otlp": "toolwatch.collector.sources.delivery",
        "simulate": "toolwatch.collector.sources.simulator",
    },
)
