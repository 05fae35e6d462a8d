"""The control that copies normal behaviour: a block of another training session's calls (the
same-response burst control is :func:`~toolwatch.injection.spans.anomalies.inject_burst` with
``same_response``).
"""

from __future__ import annotations

import numpy as np

from toolwatch.injection.spans.context import InjectionContext
from toolwatch.injection.spans.contract import Injection, InjectionError
from toolwatch.injection.spans.editing import ROW_FIELDS, fresh_responses, insert_rows
from toolwatch.injection.spans.kinds import OtherNormalParams
from toolwatch.injection.spans.session_arrays import US_PER_S, SessionCalls
from toolwatch.words import counted


def inject_other_normal(
    kind: str,
    session: SessionCalls,
    position: int,
    rng: np.random.Generator,
    context: InjectionContext,
    params: OtherNormalParams,
) -> Injection:
    """``params.calls`` consecutive calls (tools, sizes, outcomes, gaps, response grouping)
    copied from another training session."""
    m = params.calls
    donors = context.donors_with(m)
    if not donors or (len(donors) == 1 and donors[0].session_id == session.session_id):
        raise InjectionError(f"no other training session with >= {counted(m, 'call')} to copy from")
    donor = donors[int(rng.integers(len(donors)))]
    while donor.session_id == session.session_id:  # "another" session
        donor = donors[int(rng.integers(len(donors)))]
    a = int(rng.integers(len(donor) - m + 1))
    block = slice(a, a + m)
    rows = {name: donor[name][block].copy() for name in ROW_FIELDS if name in donor.columns}
    starts = donor.response_starts()[block].copy()
    starts[0] = True
    rows["response_id"] = fresh_responses(kind, int(starts.sum()))[np.cumsum(starts) - 1]
    gaps = np.empty(m)
    gaps[0] = context.sample_gaps(rng, 1)[0]
    gaps[1:] = np.diff(donor["start_time"][block]) / US_PER_S
    return insert_rows(kind, session, position, rows, gaps)
