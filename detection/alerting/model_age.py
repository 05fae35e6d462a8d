"""How old an adaptive model's statistics are when live calls reach it, and what that means.

Without a decay floor the adaptive model fades with event time, traffic or not: a model first
used many half-lives after its newest call has faded to nearly nothing (the first fold prunes
it), and normal streams alarm. That is said once, as a WARNING, with what to do; or, with
``--fade-from-first-call``, the gap is skipped (:meth:`DecayedStats.skip_gap`).
"""

from __future__ import annotations

import logging
from typing import Final

from toolwatch.detection.model.adaptive_config import DAY_S
from toolwatch.detection.scoring.adaptive import StreamScorer

log = logging.getLogger(__name__)

#: Warned past this many half-lives (the learnt weight is then below 1/16).
STALE_HALF_LIVES: Final = 4.0


def stale_line(scorer: StreamScorer, now_s: float, when: str) -> str | None:
    """The warning for an adaptive scorer whose newest call is far before ``now_s`` (``when``
    names that time), or None: frozen, floored, no decay, or recent enough."""
    model = scorer.adaptive
    if model is None or not model.stats.fades_in_gaps:
        return None
    age_s = now_s - scorer.last_seen_s
    half_lives = age_s / model.stats.half_life_s
    if half_lives < STALE_HALF_LIVES:
        return None
    return (
        f"live scoring: the adaptive model's newest call is {age_s / DAY_S:,.0f} days "
        f"({half_lives:.1f} half-lives of {model.config.half_life_days:g} d) before {when}: "
        f"its statistics have faded to 2^-{half_lives:.1f} of their weight, so normal streams "
        "will alarm; retrain on recent traffic, or start the collector with "
        "--fade-from-first-call (the gap before the first live call does not fade the model)"
    )


def first_call(scorer: StreamScorer, t_s: float, *, skip: bool) -> None:
    """At a fresh state's first call (event time ``t_s``): skip the deployment gap, or warn
    if the model is stale."""
    if scorer.adaptive is None or scorer.now_us:  # frozen, or a restored state: no gap
        return
    if skip:
        skipped = scorer.skip_gap(t_s)
        if skipped:
            log.info(
                "live scoring: the %.1f days between the model's newest call and the first "
                "live call are skipped (--fade-from-first-call): old behaviour fades from now",
                skipped / DAY_S,
            )
        return
    line = stale_line(scorer, t_s, "the first call scored")
    if line:
        log.warning(line)
