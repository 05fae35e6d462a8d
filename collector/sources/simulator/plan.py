"""Step 1 of ``workload.generate``, **plan**: the sessions of each split with exact call totals,
their lengths, kinds and days, a parent for each subagent, the client version of each session,
each MCP server's call budget spread over its sessions, and a session for every tool of the
inventory.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import date

import numpy as np

from toolwatch import study
from toolwatch.collector.sources.simulator.allocation import largest_remainder, partition
from toolwatch.collector.sources.simulator.calibration import (
    INTERACTIVE,
    LONG_EXTRA_MED,
    LONG_EXTRA_SD,
    LONG_MAX,
    MCP_CAP,
    SHORT_MEAN,
    SHORT_SHARE,
    SUBAGENT_SHARE,
    WEEKEND_AVOID,
)
from toolwatch.collector.sources.simulator.config import (
    RUNAWAY_OFFSET,
    SPLIT_NAMES,
    STUDY_DAYS,
    UPGRADE_DAY,
    SimulationConfig,
    as_date,
    split_dates,
)
from toolwatch.collector.sources.simulator.tools import (
    ALL_TOOLS,
    KIND_WEIGHTS,
    MAIN_KINDS,
    RENAMES,
    SERVER_USE,
    SERVERS,
    SUB_KINDS,
    TOOL_INDEX,
)


@dataclass(slots=True)
class SessionPlan:
    index: int
    split: str  # train | calibration | test
    short: bool
    n: int
    subagent: bool
    kind: str
    interactive: bool
    day: int  # day offset into the corpus
    new_era: bool = False
    parent: int = -1
    mcp: dict[str, int] = field(default_factory=dict)
    must: set[int] = field(default_factory=set)  # tools this session calls at least once
    runaway: bool = False
    loop: tuple[int, int] = (0, 0)  # positions [begin, end) of the refused calls


def split_windows(start: date, days: int) -> dict[str, tuple[int, int]]:
    """Split -> (first day offset, end day offset exclusive)."""
    return {
        name: ((a - start).days, (b - start).days + 1)
        for name, (a, b) in split_dates(start, days).items()
    }


def plan_sessions(
    config: SimulationConfig, windows: dict[str, tuple[int, int]], rng: np.random.Generator
) -> list[SessionPlan]:
    """Sessions per group with exact call totals, kinds, days; then parents and eras."""
    corpus_sessions, corpus_calls = int(study.CORPUS["sessions"]), int(study.CORPUS["calls"])
    published = {  # group -> (sessions, calls); the short test-window sessions by arithmetic
        "train": study.SPLITS["train"],
        "calibration": study.SPLITS["calibration"],
        "test": study.SPLITS["test"],
        "test_short": (
            corpus_sessions - sum(s for s, _ in study.SPLITS.values()),
            corpus_calls - sum(c for _, c in study.SPLITS.values()),
        ),
    }
    first_weekday = as_date(config.start).weekday()  # fewer sessions on Sat/Sun
    quota = np.array([s for s, _ in published.values()], dtype=float)
    counts = largest_remainder(quota * config.sessions / corpus_sessions, config.sessions, 1)
    plans: list[SessionPlan] = []
    for (group, (pub_n, pub_calls)), n_group in zip(
        published.items(), counts.tolist(), strict=True
    ):
        split = "test" if group == "test_short" else group
        calls = round(pub_calls * n_group / pub_n)  # keeps the published mean length
        if group == "test_short":
            n_short = n_group
        elif group == "test":
            n_short = 0
        else:
            n_short = min(n_group - 1, round(n_group * SHORT_SHARE[group]))
        n_long = n_group - n_short
        short = np.minimum(29, 1 + rng.geometric(1 / (SHORT_MEAN - 1), n_short))
        if group == "test_short":
            short = partition(calls - n_short, short - 1.0, 0, 28) + 1
        long_total = max(calls - int(short.sum()), 30 * n_long)
        extra = np.exp(rng.normal(math.log(LONG_EXTRA_MED), LONG_EXTRA_SD, n_long))
        long = partition(long_total - 30 * n_long, extra, 0, LONG_MAX - 30) + 30
        lo, hi = windows[split]
        sizes = [(int(x), True) for x in short] + [(int(x), False) for x in long]
        for n, is_short in sizes:
            sub = bool(rng.random() < SUBAGENT_SHARE[is_short])
            kinds = SUB_KINDS if sub else MAIN_KINDS
            kind = kinds[int(rng.choice(len(kinds), p=[w for _, w in kinds]))][0]
            day = int(rng.integers(lo, hi))
            if (first_weekday + day) % 7 >= 5 and rng.random() < WEEKEND_AVOID:
                day = int(rng.integers(lo, hi))
            interactive = not sub and bool(rng.random() < INTERACTIVE)
            plans.append(SessionPlan(len(plans), split, is_short, n, sub, kind, interactive, day))
    _plan_calendar(plans, config, windows, rng)
    return plans


def _plan_calendar(
    plans: list[SessionPlan],
    config: SimulationConfig,
    windows: dict[str, tuple[int, int]],
    rng: np.random.Generator,
) -> None:
    """The retry-loop subagent; the corpus spans every day; client versions; parents."""
    upgrade = round(UPGRADE_DAY * config.days / STUDY_DAYS)
    runaway: SessionPlan | None = None
    if config.runaway_retries > 0:
        lo, hi = windows["test"]
        longs = [p for p in plans if p.split == "test" and not p.short]
        length = config.runaway_retries + 10  # a few calls, the loop, a few calls
        runaway = min(longs, key=lambda p: abs(p.n - length))
        others = [p for p in longs if p is not runaway]
        if others:  # keep the group's exact total: the longest session absorbs the change
            longest = max(others, key=lambda p: p.n)
            if longest.n + runaway.n - length >= study.TEST_MIN_CALLS:
                longest.n += runaway.n - length
                runaway.n = length
        runaway.subagent, runaway.interactive, runaway.runaway = True, False, True
        runaway.kind = "general"
        runaway.day = min(max(round(RUNAWAY_OFFSET.days * config.days / STUDY_DAYS), lo), hi - 1)
        upgrade = min(upgrade, runaway.day)  # the loop's tool is the new name
    mains = {s: [p for p in plans if p.split == s and not p.subagent] for s in windows}
    pinned: set[int] = set()
    for split, (lo, hi) in windows.items():  # a session on the first and on the last day
        group = mains[split] or [p for p in plans if p.split == split and not p.runaway]
        if group and split == SPLIT_NAMES[0]:
            group[0].day = lo
            pinned.add(group[0].index)
        if group and split == SPLIT_NAMES[-1]:
            group[-1].day = hi - 1
            pinned.add(group[-1].index)
    for p in plans:
        p.new_era = p.day >= upgrade
    if runaway is not None:  # its parent runs that morning and calls Agent just before it
        pool = [
            m for m in mains["test"] if "Task" in KIND_WEIGHTS[m.kind] and m.index not in pinned
        ]
        if pool and not any(m.day == runaway.day for m in pool):
            moved = pool[int(rng.integers(len(pool)))]
            moved.day, moved.new_era = runaway.day, True
        _adopt(runaway, pool, rng)
        runaway.new_era = True
    for p in plans:  # every other subagent: a parent in its window that calls Task/Agent
        if p.subagent and not p.runaway:
            _adopt(p, [m for m in mains[p.split] if "Task" in KIND_WEIGHTS[m.kind]], rng)


def _adopt(child: SessionPlan, pool: list[SessionPlan], rng: np.random.Generator) -> None:
    """Pick the subagent's parent (longer sessions start more subagents); share its day."""
    if child.runaway:
        pool = [m for m in pool if m.day == child.day] or pool
    if not pool:
        return
    weights = np.array([m.n for m in pool], dtype=float)
    parent = pool[int(rng.choice(len(pool), p=weights / weights.sum()))]
    child.parent, child.day, child.new_era = parent.index, parent.day, parent.new_era
    parent.must.add(TOOL_INDEX[RENAMES["Task"] if parent.new_era else "Task"])


def plan_mcp(plans: list[SessionPlan], scale: float, rng: np.random.Generator) -> None:
    """Spread each server's exact call budget over the sessions that use it."""
    used = np.zeros(len(plans))
    caps = np.array([0 if p.runaway else max(1, math.floor(MCP_CAP * p.n)) for p in plans])
    for server in SERVERS:
        budget = round(server.calls * scale)
        if budget == 0:
            continue
        use = SERVER_USE[server.name]
        room = caps - used
        chosen = [p.index for p in plans if room[p.index] > 0 and rng.random() < use.get(p.kind, 0)]
        if room[chosen].sum() < budget:  # too few users at this scale: recruit some
            for i in np.argsort(-(room * rng.random(len(plans)))).tolist():
                if room[chosen].sum() >= budget:
                    break
                if i not in chosen and room[i] > 0:
                    chosen.append(i)
        idx = np.array(sorted(chosen), dtype=np.int64)
        weights = np.array([plans[i].n for i in idx], dtype=float) * rng.gamma(1.0, 1.0, len(idx))
        for i, k in zip(
            idx.tolist(), partition(budget, weights, 0, room[idx]).tolist(), strict=True
        ):
            if k > 0:
                plans[i].mcp[server.name] = int(k)
                used[i] += k


def plan_coverage(plans: list[SessionPlan], rng: np.random.Generator) -> None:
    """Give every tool of the inventory a session that calls it (the study counts 78 tools).

    A tool goes to a random session that could call it anyway: a built-in of the session's
    kind (under its client version), or an MCP tool of a server the session already works
    with. At small scales a tool may have no such session and is then absent, as it would be
    in a small real corpus.
    """
    vocab = {
        (kind, era): {RENAMES.get(t, t) if era else t for t in KIND_WEIGHTS[kind]}
        for kind in KIND_WEIGHTS
        for era in (False, True)
    }
    roomy = [p for p in plans if not p.runaway and p.n - sum(p.mcp.values()) >= 8]
    for i, spec in enumerate(ALL_TOOLS):
        if spec.server is None:
            eligible = [p for p in roomy if spec.name in vocab[(p.kind, p.new_era)]]
            room = np.array([p.n - sum(p.mcp.values()) for p in eligible], dtype=float)
        else:  # room to repeat a call of that server, so the tool can take one's place
            eligible = [p for p in plans if p.mcp.get(spec.server, 0) >= 3]
            room = np.array([p.mcp[spec.server] for p in eligible], dtype=float) ** 2
        if eligible and not any(i in p.must for p in eligible):
            eligible[int(rng.choice(len(eligible), p=room / room.sum()))].must.add(i)
