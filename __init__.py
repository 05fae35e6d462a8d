"""toolwatch: content-free telemetry and anomaly detection for LLM agents using MCP tools.

Users need three names: :func:`instrument` (wrap the MCP client), :func:`model_response`
(declare which model response issues the next calls) and :class:`CallRecord` (the row).
"""

from toolwatch.instrumentation import instrument, model_response
from toolwatch.record import CallRecord

__all__ = ["CallRecord", "instrument", "model_response"]
__version__ = "0.1.0"
