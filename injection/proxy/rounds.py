"""A 2026-07-28 tool call over several rounds, through the fault proxy.

On 2026-07-28 a server asks its client for input (sampling, elicitation, roots) by answering
``tools/call`` with an ``InputRequiredResult``; the client runs its callbacks and calls again
with ``inputResponses`` and the echoed ``requestState``. The proxy used to rebuild the upstream
call from name and arguments alone, so the retry lost both (the server asked again, round after
round), and the request's ``_meta`` with the client's declared capabilities, so a server that
checks them refused every input request (``-32021``) where a direct connection worked.

:func:`upstream_params` is the client's request as the upstream gets it; :class:`Rounds`
keeps, between rounds, the fault plan of a call the upstream asked for input, so a retry is
the same call (not a new occurrence), carries the arguments the plan chose (the server's
``requestState`` is bound to them), and the fault meets the call's final result.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import mcp_types as types

from toolwatch.injection.faults.effects import CallPlan
from toolwatch.words import counted

logger = logging.getLogger(__name__)

#: ``_meta`` keys of the client's request the proxy does not pass on: its own progress token
#: replaces the client's; its upstream session stamps the protocol version and the proxy's
#: identity. (A 2026-07-28 log-level opt-in is passed on only when the request may hold the
#: shared connection's log lines: :mod:`.log_lines`.)
_NOT_FORWARDED = frozenset(
    {
        "progress_token",
        "progressToken",
        types.PROTOCOL_VERSION_META_KEY,
        types.CLIENT_INFO_META_KEY,
    }
)
#: Calls waiting for their client's next round, at most; the oldest is forgotten past it.
MAX_HELD = 1024


def is_retry(params: types.CallToolRequestParams) -> bool:
    """Whether ``params`` is a later round of a call (it answers an ``InputRequiredResult``)."""
    return params.input_responses is not None or params.request_state is not None


def upstream_params(
    params: types.CallToolRequestParams, arguments: dict[str, Any] | None, log_opt_in: bool = False
) -> types.CallToolRequestParams:
    """The client's ``tools/call`` as the upstream gets it: ``arguments`` (the fault plan's),
    its input responses, request state and ``_meta`` (declared capabilities included: the
    upstream session keeps them, :func:`.upstream.keeping_capabilities`; its log opt-in only
    with ``log_opt_in``), no task."""
    dropped = _NOT_FORWARDED if log_opt_in else _NOT_FORWARDED | {types.LOG_LEVEL_META_KEY}
    meta = {k: v for k, v in (params.meta or {}).items() if k not in dropped}
    update: dict[str, Any] = {"arguments": arguments, "meta": meta or None, "task": None}
    return params.model_copy(update=update)


def _key(params: types.CallToolRequestParams, state: str | None) -> tuple[str, str, str | None]:
    arguments = json.dumps(params.arguments or {}, sort_keys=True, default=str)
    return params.name, arguments, state


class Rounds:
    """Fault plans of the calls whose upstream asked for input, until their next round.

    A round is found again by tool, the client's arguments and the ``requestState`` the
    upstream handed out (the client echoes it verbatim); kept in memory only."""

    def __init__(self) -> None:
        self._held: dict[tuple[str, str, str | None], CallPlan] = {}
        #: Calls forgotten because their client never came back while :data:`MAX_HELD` others
        #: waited (their fault, if one was due, was not applied).
        self.forgotten = 0

    def hold(
        self, params: types.CallToolRequestParams, result: types.Result, plan: CallPlan
    ) -> None:
        """Keep ``plan`` for the next round, when ``result`` asks the client for input."""
        if not isinstance(result, types.InputRequiredResult):
            return
        self._held[_key(params, result.request_state)] = plan
        if len(self._held) > MAX_HELD:
            oldest = next(iter(self._held))
            dropped = self._held.pop(oldest)
            self.forgotten += 1
            logger.warning(
                "forgot call #%d of %r: its client did not answer the upstream's input request "
                "while %s waited (%d forgotten so far)",
                dropped.occurrence,
                dropped.tool,
                counted(MAX_HELD, "other call"),
                self.forgotten,
            )

    def resume(self, params: types.CallToolRequestParams) -> CallPlan | None:
        """The plan of the call ``params`` continues, if one is held."""
        return self._held.pop(_key(params, params.request_state), None)
