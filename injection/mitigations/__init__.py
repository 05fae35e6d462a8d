"""Client-side mitigations: wrappers around anything with an MCP-style ``call_tool``.

Each wrapper takes an inner object exposing ``call_tool(name, arguments, read_timeout_seconds)``
and ``list_tools()`` (an ``mcp.Client``, a ``ClientSession``, or another wrapper) and returns an
object with the same two methods, so production agents can stack them exactly as the workbench
does::

    from toolwatch.injection.mitigations import apply_mitigations
    client = apply_mitigations(mcp_client, ["retry", "schema", "scan", "verify"])

* :class:`RetryWithBackoff` (``retry.py``) retries timeouts, 5xx-class and rate-limit failures
  with exponential backoff inside a total deadline, never a permission denial or invalid
  arguments;
* :class:`SchemaValidation` (``schema.py``) checks a result against the tool's declared output
  schema and flags empty results, so "nothing came back" is not read as "there is nothing";
* :class:`InjectionScanner` (``scan.py``) withholds results (and tool descriptions) that address
  the agent; the replacement names the tool and the kind of instruction, never the text itself;
* :class:`OutputVerifier` (``verify.py``) cross-checks values between tools and flags
  contradictions, stale timestamps and results that do not mention what was asked for.

Problems found by schema/verify are *annotations*: the result is kept and a marked text block
plus a machine-readable flag (``result.meta["toolwatch/flags"]``) is added, so the consumer
decides. The scanner *blocks*: a flagged payload must never reach the model.

The helpers the wrappers are built from (``results``, ``failures``, ``instructions``,
``values``, ``acts``, ``keys``) are internal; the workbench imports them from their modules.
"""

from toolwatch.injection.mitigations.results import FLAGS_META_KEY
from toolwatch.injection.mitigations.retry import RetryWithBackoff
from toolwatch.injection.mitigations.scan import InjectionScanner
from toolwatch.injection.mitigations.schema import SchemaValidation
from toolwatch.injection.mitigations.stack import (
    MITIGATION_NAMES,
    apply_mitigations,
    parse_mitigations,
)
from toolwatch.injection.mitigations.verify import OutputVerifier
from toolwatch.injection.mitigations.wrapper import MitigationEvent, ToolClient

__all__ = [
    "FLAGS_META_KEY",
    "MITIGATION_NAMES",
    "InjectionScanner",
    "MitigationEvent",
    "OutputVerifier",
    "RetryWithBackoff",
    "SchemaValidation",
    "ToolClient",
    "apply_mitigations",
    "parse_mitigations",
]
