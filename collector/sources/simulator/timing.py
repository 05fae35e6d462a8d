"""Steps 4 and 5 of ``workload.generate``, **time** and **calendar**: each call's offset inside its
session (streaming gaps, model latency, think time) and each session's start (working hours;
subagents just after their parent's ``Task``/``Agent`` call; inside the split).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from toolwatch.collector.sources.simulator.calibration import (
    LATENCY_FLOOR,
    LATENCY_MED,
    LATENCY_SD,
    LOOP_LATENCY,
    SPEED_SD,
    THINK_MAX,
    THINK_MED,
    THINK_SD,
    TURN_END,
    WITHIN_MED,
    WITHIN_SD,
    WITHIN_SIZE_POWER,
)
from toolwatch.collector.sources.simulator.config import DAY_US, RUNAWAY_OFFSET
from toolwatch.collector.sources.simulator.plan import SessionPlan
from toolwatch.collector.sources.simulator.sequence import SessionCalls
from toolwatch.collector.sources.simulator.tools import (
    ALL_TOOLS,
    SUBAGENT_TOOLS,
)


def call_offsets(
    new_resp: np.ndarray,
    duration: np.ndarray,
    input_bytes: np.ndarray,
    session_of: np.ndarray,
    plans: Sequence[SessionPlan],
    loop_rows: np.ndarray,
    rng: np.random.Generator,
) -> np.ndarray:
    """Whole milliseconds from the session's first call to each call (int64).

    A call inside a response follows the previous one by a short streaming gap; the first call
    of a response follows the end of the previous response's tools by the model's latency.
    """
    n = len(new_resp)
    speed = np.exp(rng.normal(0.0, SPEED_SD, len(plans)))[session_of]
    latency = LATENCY_FLOOR + speed * np.exp(
        math.log(LATENCY_MED) + LATENCY_SD * rng.standard_normal(n)
    )
    interactive = np.array([p.interactive for p in plans])[session_of]
    turn_end = interactive & (rng.random(n) < TURN_END)
    think = np.exp(math.log(THINK_MED) + THINK_SD * rng.standard_normal(n))
    latency += turn_end * np.minimum(think, THINK_MAX)
    within = np.exp(math.log(WITHIN_MED) + WITHIN_SD * rng.standard_normal(n))
    within = np.clip(within * (input_bytes / 200.0) ** WITHIN_SIZE_POWER, 0.005, 600.0)
    if len(loop_rows):
        mu, sd = LOOP_LATENCY
        latency[loop_rows] = LATENCY_FLOOR + rng.lognormal(math.log(mu), sd, len(loop_rows))
    first = np.r_[True, session_of[1:] != session_of[:-1]].tolist()
    lat, wit, dur, new = latency.tolist(), within.tolist(), duration.tolist(), new_resp.tolist()
    out = [0.0] * n
    t = end = 0.0
    for i in range(n):
        if first[i]:
            t = end = 0.0
        elif new[i]:
            t = end + lat[i]
        else:
            t += wit[i]
        out[i] = t
        end = max(end, t + dur[i])
    # whole milliseconds, like transcript stamps; never two calls of a session on one stamp
    ms = np.round(np.array(out) * 1000.0).astype(np.int64)
    same = np.flatnonzero(~np.array(first[1:]) & (ms[1:] <= ms[:-1])) + 1
    while len(same):
        ms[same] = ms[same - 1] + 1
        same = np.flatnonzero(~np.array(first[1:]) & (ms[1:] <= ms[:-1])) + 1
    return ms


def session_starts(
    plans: Sequence[SessionPlan],
    seqs: Sequence[SessionCalls],
    offsets_ms: np.ndarray,
    lengths: np.ndarray,
    windows: dict[str, tuple[int, int]],
    rng: np.random.Generator,
) -> np.ndarray:
    """Session start times in whole ms as µs since the corpus's first day.

    Main sessions start at working hours on their day; a subagent starts a few seconds after
    one of its parent's ``Task``/``Agent`` calls (the retry loop's parent is moved so that its
    call precedes the loop); nobody crosses the end of its split window.
    """
    first = np.cumsum(lengths) - lengths
    span = (offsets_ms[first + lengths - 1] + 60_000) * 1000
    starts = np.zeros(len(plans), dtype=np.int64)

    def clamp(i: int, t0: int) -> None:
        lo, hi = (d * DAY_US for d in windows[plans[i].split])
        starts[i] = max(lo, min(t0, hi - int(span[i]))) // 1000 * 1000

    def spawn_offset(parent: int) -> int:
        """µs from the parent's start to a random Task/Agent call of it (or any call)."""
        calls = [j for j, t in enumerate(seqs[parent].tools) if ALL_TOOLS[t].name in SUBAGENT_TOOLS]
        j = calls[int(rng.integers(len(calls)))] if calls else int(rng.integers(lengths[parent]))
        return int(offsets_ms[first[parent] + j]) * 1000

    runaway = next((p for p in plans if p.runaway), None)
    for p in plans:
        if not p.subagent:
            clamp(p.index, p.day * DAY_US + int(_working_hour(rng) * 3600e6))
    if runaway is not None:
        t0 = runaway.day * DAY_US + int(RUNAWAY_OFFSET.seconds * 1e6 + rng.uniform(0, 240e6))
        clamp(runaway.index, t0)
        if runaway.parent >= 0:
            lead = spawn_offset(runaway.parent) + int(rng.uniform(2e6, 8e6))
            clamp(runaway.parent, int(starts[runaway.index]) - lead)
    for p in plans:
        if p.subagent and not p.runaway:
            if p.parent >= 0:
                t0 = starts[p.parent] + spawn_offset(p.parent) + int(rng.uniform(2e6, 8e6))
            else:
                t0 = p.day * DAY_US + int(_working_hour(rng) * 3600e6)
            clamp(p.index, int(t0))
    return starts


def _working_hour(rng: np.random.Generator) -> float:
    """UTC hour of a session start: a Japan-based person's morning, afternoon or night."""
    c = rng.random()
    if c < 0.45:
        h = rng.normal(2.0, 2.0)
    elif c < 0.85:
        h = rng.normal(7.0, 2.2)
    else:
        h = rng.normal(12.5, 1.8)
    return float(h % 24.0)
