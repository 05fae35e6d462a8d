"""One entry point for every kind: :func:`inject` hands a session to the kind's injector;
:func:`draw_position` draws the insertion point the experiment shares between kinds.
"""

from __future__ import annotations

from typing import Final

import numpy as np

from toolwatch.injection.spans.anomalies import (
    inject_burst,
    inject_exfiltration,
    inject_hijack,
    inject_out_of_scope,
    inject_runaway,
)
from toolwatch.injection.spans.context import InjectionContext
from toolwatch.injection.spans.contract import Injection, InjectionError, Injector
from toolwatch.injection.spans.controls import inject_other_normal
from toolwatch.injection.spans.kinds import (
    ALL_KINDS,
    DEFAULT_PARAMS,
    PROVENANCE_KINDS,
    ExfiltrationParams,
    KindParams,
)
from toolwatch.injection.spans.provenance_exfiltration import inject_provenance_exfiltration
from toolwatch.injection.spans.session_arrays import SessionCalls
from toolwatch.words import counted

_INJECTORS: Final[dict[str, Injector]] = {
    "burst": inject_burst,
    "runaway_retry": inject_runaway,
    "sequence_hijack": inject_hijack,
    "out_of_scope_tool": inject_out_of_scope,
    "control_other_normal": inject_other_normal,
    "control_same_response_burst": inject_burst,
    **{kind: inject_provenance_exfiltration for kind in PROVENANCE_KINDS},
}


def inject(
    kind: str,
    session: SessionCalls,
    position: int,
    rng: np.random.Generator,
    context: InjectionContext,
    params: KindParams | None = None,
    *,
    bounds: tuple[int, int] | None = None,
) -> Injection:
    """Inject one anomaly of ``kind`` at index ``position`` of ``session``.

    ``bounds`` (inclusive) limits where an exfiltration may move to find a Read just before
    it; by default the whole session. Raises :class:`InjectionError` when the kind cannot be
    placed (e.g. no out-of-scope tool exists for this session).
    """
    if kind not in DEFAULT_PARAMS:
        raise InjectionError(f"unknown anomaly kind {kind!r} (known: {', '.join(ALL_KINDS)})")
    p = params if params is not None else DEFAULT_PARAMS[kind]
    if not 1 <= position <= len(session):
        raise InjectionError(f"position {position} outside 1..{len(session)}")
    if isinstance(p, ExfiltrationParams):
        b = bounds if bounds is not None else (1, len(session))
        return inject_exfiltration(kind, session, position, rng, context, p, b)
    return _INJECTORS[kind](kind, session, position, rng, context, p)


def draw_position(
    session: SessionCalls,
    rng: np.random.Generator,
    *,
    head: int = 10,
    tail: int = 10,
    response_starts_only: bool = True,
) -> int:
    """A random insertion point between call ``head`` and ``tail`` calls before the end.

    With ``response_starts_only`` the point is drawn among calls that open a model response
    (an injected response cannot sit inside another one); if none is in range, any call. With
    ``tail`` 0 the end of the session (after its last call) is a point too, and a response
    start.
    """
    n = len(session)
    lo, hi = head, n - tail
    if hi < lo or lo < 1:
        raise InjectionError(
            f"session of {counted(n, 'call')} is too short for head {head}, tail {tail}"
        )
    idx = np.arange(lo, hi + 1)
    if response_starts_only:
        starts = np.append(session.response_starts(), True)[idx]
        if starts.any():
            idx = idx[starts]
    return int(idx[int(rng.integers(len(idx)))])
