"""A SIMULATED agent workload with the structure of the study's corpus (BRIEF §2–3).

Why it exists: the study's normal data is one person's private Claude Code history, so the
detection study is reproduced on a workload with the same *structure* — split sizes by time,
tool vocabulary, session habits, response boundaries, gap floors, per-tool sizes and failures,
subagents, and the one real misbehaviour the study's scan found — without being shaped to make
detection easy or hard. Every row says what it is: ``source="simulated"``,
``service="toolwatch-simulator"``, session ids ``sim-…``, response ids ``msg_sim_…``, call ids
``toolu_sim_…``. ``label`` is null everywhere: the retry-loop subagent is unlabelled normal
data, as in the study, where a scan found it.

Identity follows the call record (and the importer): ``session_id`` is the conversation, so a
subagent carries its parent's session id (and trace id) and its own ``agent_id``; ``seq`` counts
the calls of the conversation, main agent and subagents together, by start time. The unit the
study counts as a "session" — and that splits, gaps and detection use — is the *stream*
``(session_id, agent_id)``: 422 streams here, each subagent one of them.

How a corpus is built (numpy, deterministic per seed, well under a second for 422 sessions):

1. **plan** — session counts and exact call totals per split (``study.SPLITS``; the test
   window also holds short sessions, < 30 calls, that the study left out of its test split),
   heavy-tailed session lengths, kinds (coding, ops, research, browser, notes; subagents:
   explore, research, general), a day, a parent session for each subagent, an exact MCP call
   budget per server spread over the sessions that use it, and one session per tool that
   makes sure the whole inventory (78 tools) appears;
2. **sequence** — per session: its own vocabulary and its own habit matrix (global affinities
   × a per-session random preference, so a session repeats its own procedures), MCP episodes
   interleaved with built-in work, model responses of one or more calls (parallel calls mostly
   repeat the first tool), failures (per-tool rate × a per-session propensity; a failed call
   is often retried next);
3. **shape** — per call, per-tool log-normal input/result bytes and durations;
4. **time** — within a response, sub-second-to-seconds gaps; the next response starts after
   the previous one's tools returned plus the model's latency (never under 1.1 s) plus, in
   interactive sessions, the person's think time at the end of a turn;
5. **calendar** — main sessions at a Japan-based person's working hours on their day;
   subagents a few seconds after a ``Task``/``Agent`` call of their parent; nothing crosses a
   split boundary; a client upgrade in the test window renames ``Task``→``Agent``,
   ``BashOutput``→``TaskOutput``, ``KillShell``→``TaskStop`` and loads MCP tools lazily through
   ``ToolSearch`` (the study's "tools absent in August");
6. **the retry loop** — one subagent in the test window (2026-09-07 08:00 UTC by default) gets
   "Concurrent subagent limit reached. Do not retry." from ``Agent`` and calls it again 32
   times: same input, failed, one response each, seconds apart.
"""

from __future__ import annotations

import bisect
import functools
import json
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import Any, Final

import numpy as np
import pyarrow as pa

from toolwatch import study
from toolwatch.collector.sources.simulator.tools import (
    AFFINITY,
    ALL_TOOLS,
    APPROVAL_TOOLS,
    KIND_WEIGHTS,
    LAZY_MCP_LOADER,
    MAIN_KINDS,
    RENAMES,
    SERVER_USE,
    SERVERS,
    SUB_KINDS,
    SUBAGENT_TOOLS,
    TOOL_INDEX,
    ServerSpec,
)
from toolwatch.collector.store.arrow_schema import CALLS_SCHEMA
from toolwatch.conventions import ERROR_TYPE_TOOL_ERROR
from toolwatch.record import result_size

SOURCE: Final = "simulated"
SERVICE: Final = "toolwatch-simulator"
SESSION_PREFIX: Final = "sim-"
RESPONSE_PREFIX: Final = "msg_sim_"
CALL_PREFIX: Final = "toolu_sim_"

#: The refusal the study's retry-loop subagent ignored (only its byte size is used).
REFUSAL_TEXT: Final = "Concurrent subagent limit reached. Do not retry."
#: The retry loop's tool: the subagent tried to start a subagent of its own.
RETRY_TOOL: Final = "Agent"

SPLIT_NAMES: Final = study.SPLIT_NAMES
_STUDY_DAYS: Final = sum(study.SPLIT_DAYS)
#: The client upgrade (tool renames) and the retry loop, as offsets into a 42-day corpus.
_UPGRADE_DAY: Final = 34  # 2026-09-07
_RUNAWAY_OFFSET: Final = timedelta(days=34, hours=8)  # 2026-09-07 08:00 UTC
_DAY_US: Final = 86_400_000_000

#: One stream of calls: ``(session_id, agent_id)``; ``agent_id`` is None for the main agent.
Stream = tuple[str, str | None]


def _as_date(value: date | str) -> date:
    if isinstance(value, datetime):
        return value.date()
    if isinstance(value, date):
        return value
    try:
        return date.fromisoformat(value)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"start must be an ISO date (YYYY-MM-DD), got {value!r}") from exc


def _day_us(d: date) -> int:
    return int(datetime(d.year, d.month, d.day, tzinfo=UTC).timestamp()) * 1_000_000


def split_dates(
    start: date | str = study.CORPUS_START, days: int = _STUDY_DAYS
) -> dict[str, tuple[date, date]]:
    """First and last day (inclusive) of each split, scaled from the study's 21/7/14 days."""
    first = _as_date(start)
    if days < 3:
        raise ValueError(f"days must be at least 3 (one per split), got {days}")
    train = max(1, round(days * study.SPLIT_DAYS[0] / _STUDY_DAYS))
    calibration = max(1, round(days * study.SPLIT_DAYS[1] / _STUDY_DAYS))
    if train + calibration >= days:
        train, calibration = days - 2, 1
    out: dict[str, tuple[date, date]] = {}
    day = first
    for name, n in zip(SPLIT_NAMES, (train, calibration, days - train - calibration), strict=True):
        out[name] = (day, day + timedelta(days=n - 1))
        day += timedelta(days=n)
    return out


#: The study's default split dates (inclusive ISO days); a session belongs to the split of its
#: first call. Test-window sessions with fewer than ``study.TEST_MIN_CALLS`` calls are not in
#: the study's test split.
SPLIT_DATES: Final[dict[str, tuple[str, str]]] = {
    name: (a.isoformat(), b.isoformat()) for name, (a, b) in split_dates().items()
}


@dataclass(frozen=True)
class SimulationConfig:
    """Everything that determines a simulated corpus (saved beside it so it can be rebuilt)."""

    seed: int = 0
    sessions: int = int(study.CORPUS["sessions"])
    start: str = study.CORPUS_START
    days: int = int(study.CORPUS["days"])
    #: retries of the refused ``Agent`` call in the retry-loop subagent; 0 = no such session
    runaway_retries: int = 32

    def __post_init__(self) -> None:
        if self.sessions < 4:
            raise ValueError(
                f"sessions must be at least 4 (one per split group), got {self.sessions}"
            )
        if self.runaway_retries < 0:
            raise ValueError(f"runaway_retries must be >= 0, got {self.runaway_retries}")
        if self.seed < 0:
            raise ValueError(f"seed must be >= 0, got {self.seed}")
        split_dates(self.start, self.days)

    @classmethod
    def scaled(cls, scale: float, **kwargs: Any) -> SimulationConfig:
        """A corpus ``scale`` times the study's (same shape and split proportions)."""
        if not scale > 0:
            raise ValueError(f"scale must be positive, got {scale}")
        return cls(sessions=max(4, round(study.CORPUS["sessions"] * scale)), **kwargs)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)


def simulate(
    seed: int = 0,
    sessions: int = int(study.CORPUS["sessions"]),
    start: date | str = study.CORPUS_START,
    days: int = int(study.CORPUS["days"]),
    *,
    scale: float | None = None,
    runaway_retries: int = 32,
) -> pa.Table:
    """A simulated corpus: an Arrow table with ``CALLS_SCHEMA``, each stream's rows together.

    ``scale`` (if given) replaces ``sessions`` with ``round(422 * scale)``.
    """
    options: dict[str, Any] = {
        "seed": seed,
        "start": _as_date(start).isoformat(),
        "days": days,
        "runaway_retries": runaway_retries,
    }
    if scale is not None:
        return generate(SimulationConfig.scaled(scale, **options))
    return generate(SimulationConfig(sessions=sessions, **options))


def assign_splits(
    table: pa.Table,
    dates: Mapping[str, tuple[str, str]] | None = None,
    min_test_calls: int = study.TEST_MIN_CALLS,
) -> dict[str, list[Stream]]:
    """Streams ``(session_id, agent_id)`` per split by the stream's first call time (the
    study's rule: each subagent is a session of its own).

    Test-window streams with fewer than ``min_test_calls`` calls go to ``test_short`` (kept
    out of the study's test split); streams outside every window go nowhere. Within a split,
    streams are listed by first call time.
    """
    dates = dates or SPLIT_DATES
    bounds = [
        (name, _day_us(_as_date(a)), _day_us(_as_date(b) + timedelta(days=1)))
        for name, (a, b) in dates.items()
    ]
    out: dict[str, list[Stream]] = {name: [] for name in [*dates, "test_short"]}
    for key, (first, n) in sorted(_stream_firsts(table).items(), key=_by_first_time):
        for name, lo, hi in bounds:
            if lo <= first < hi:
                out["test_short" if name == "test" and n < min_test_calls else name].append(key)
                break
    return out


def _by_first_time(item: tuple[Stream, tuple[int, int]]) -> tuple[int, str, str]:
    (session, agent), (first, _) = item
    return first, session, agent or ""


def stream_calls(table: pa.Table) -> dict[Stream, int]:
    """Calls per stream ``(session_id, agent_id)`` of a call table."""
    return {key: n for key, (_, n) in _stream_firsts(table).items()}


def _stream_firsts(table: pa.Table) -> dict[Stream, tuple[int, int]]:
    """Per stream: first call time (µs since the epoch) and number of calls."""
    if table.num_rows == 0:
        return {}
    grouped = (
        table.select(["session_id", "agent_id", "start_time"])
        .group_by(["session_id", "agent_id"], use_threads=False)
        .aggregate([("start_time", "min"), ("start_time", "count")])
    )
    firsts = grouped.column("start_time_min").cast(pa.timestamp("us", tz="UTC")).cast(pa.int64())
    return {
        (str(sid), agent): (int(t), int(n))
        for sid, agent, t, n in zip(
            grouped.column("session_id").to_pylist(),
            grouped.column("agent_id").to_pylist(),
            firsts.to_pylist(),
            grouped.column("start_time_count").to_pylist(),
            strict=True,
        )
    }


# ============================================================================ calibration
# Tuned once against the study's marginals (docs/ARCHITECTURE.md, "Simulated workload").

_SHORT_SHARE: Final[dict[str, float]] = {"train": 0.45, "calibration": 0.2}  # not published
_SHORT_MEAN: Final = 8.5  # = 1,226 calls / 145 short test-window sessions
_LONG_EXTRA_MED: Final = 75.0  # a long session has 30 + log-normal extra calls
_LONG_EXTRA_SD: Final = 0.85
_LONG_MAX: Final = 1000
_SUBAGENT_SHARE: Final[dict[bool, float]] = {True: 0.35, False: 0.15}  # short / long sessions
_INTERACTIVE: Final = 0.75
_WEEKEND_AVOID: Final = 0.35
_MCP_CAP: Final = 0.75  # at most this share of a session's calls go to MCP tools
_VOCAB_RATE: Final = 8.0  # P(a tool is in a session's vocabulary) grows with its length
_VOCAB_POWER: Final = 0.45
_VOCAB_FLOOR: Final = 3.0  # an included tool is expected at least this often
_HABIT_SHAPE: Final = 0.5  # gamma shape of the per-session transition preferences
_MULTI_BASE: Final = 0.0795  # P(multi-call response) = base × the first tool's propensity
_MULTI_P: Final = 0.52  # calls beyond the second ~ geometric(p)
_SAME_TOOL_IN_RESPONSE: Final = 0.65
_RETRY_AFTER_FAILURE: Final = 0.45
_FAIL_GAMMA: Final = (3.0, 1 / 3)  # per-session failure propensity (shape, scale)
_FAILED_OUT: Final = (110.0, 0.7)  # result bytes of a failed call (median, log-sd)
_FAILED_OUT_BASH: Final = (420.0, 1.5)
_OUT_MAX: Final = 400_000
_LATENCY_FLOOR: Final = 1.1  # seconds: a model response never starts sooner
_LATENCY_MED: Final = 7.6
_LATENCY_SD: Final = 0.85
_SPEED_SD: Final = 0.2  # per-session model speed
_TURN_END: Final = 0.07  # interactive: P(the person speaks before the next response)
_THINK_MED: Final = 40.0
_THINK_SD: Final = 1.3
_THINK_MAX: Final = 3 * 3600.0
_WITHIN_MED: Final = 0.94
_WITHIN_SD: Final = 1.52
_WITHIN_SIZE_POWER: Final = 0.25  # a larger input streams longer inside a response
_APPROVAL_SHARE: Final = 0.2
_APPROVAL_MED: Final = 4.0
_APPROVAL_SD: Final = 1.2
_DURATION_MAX: Final = 1800.0
_SESSION_SIZE_SD: Final = 0.12
_LOOP_LATENCY: Final = (1.3, 0.45)  # the retry loop re-issues fast: floor + log-normal


# ============================================================================ generation


@dataclass(slots=True)
class _Plan:
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


@dataclass(slots=True)
class _Seq:
    tools: list[int]
    new_response: list[bool]
    failed: list[bool]


def generate(config: SimulationConfig) -> pa.Table:
    """Build the corpus described by ``config`` (the steps are in the module docstring)."""
    root = np.random.SeedSequence(config.seed)
    plan_seq, session_seq, shape_seq, time_seq = root.spawn(4)
    rng = np.random.default_rng(plan_seq)
    start = _as_date(config.start)
    windows = _windows(start, config.days)
    plans = _plan_sessions(config, windows, rng)
    _plan_mcp(plans, config.sessions / study.CORPUS["sessions"], rng)
    _plan_coverage(plans, rng)

    seqs = [
        _sequence(p, np.random.default_rng(s))
        for p, s in zip(plans, session_seq.spawn(len(plans)), strict=True)
    ]
    for p, s in zip(plans, seqs, strict=True):
        if p.runaway:
            _retry_loop(p, s, config.runaway_retries)

    lengths = np.array([len(s.tools) for s in seqs], dtype=np.int64)
    total = int(lengths.sum())
    tool = np.fromiter((t for s in seqs for t in s.tools), dtype=np.int64, count=total)
    new_resp = np.fromiter((b for s in seqs for b in s.new_response), dtype=bool, count=total)
    failed = np.fromiter((b for s in seqs for b in s.failed), dtype=bool, count=total)
    session_of = np.repeat(np.arange(len(plans)), lengths)

    shape_rng = np.random.default_rng(shape_seq)
    input_bytes, output_bytes, duration = _shapes(tool, failed, session_of, plans, shape_rng)
    loop_rows = _loop_rows(plans, lengths)
    if len(loop_rows):  # the same call, refused at once with the same text
        input_bytes[loop_rows] = input_bytes[loop_rows[0]]
        output_bytes[loop_rows] = result_size(REFUSAL_TEXT)
        duration[loop_rows] = shape_rng.uniform(0.004, 0.03, len(loop_rows))

    time_rng = np.random.default_rng(time_seq)
    offsets_ms = _offsets(new_resp, duration, input_bytes, session_of, plans, loop_rows, time_rng)
    starts_us = _place(plans, seqs, offsets_ms, lengths, windows, time_rng)
    start_us = _day_us(start) + np.repeat(starts_us, lengths) + offsets_ms * 1000
    return _to_table(
        config, plans, lengths, tool, new_resp, failed, input_bytes, output_bytes, duration,
        start_us,
    )  # fmt: skip


# ---------------------------------------------------------------------------- plan


def _windows(start: date, days: int) -> dict[str, tuple[int, int]]:
    """Split -> (first day offset, end day offset exclusive)."""
    return {
        name: ((a - start).days, (b - start).days + 1)
        for name, (a, b) in split_dates(start, days).items()
    }


def _plan_sessions(
    config: SimulationConfig, windows: dict[str, tuple[int, int]], rng: np.random.Generator
) -> list[_Plan]:
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
    first_weekday = _as_date(config.start).weekday()  # fewer sessions on Sat/Sun
    quota = np.array([s for s, _ in published.values()], dtype=float)
    counts = _largest_remainder(quota * config.sessions / corpus_sessions, config.sessions, 1)
    plans: list[_Plan] = []
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
            n_short = min(n_group - 1, round(n_group * _SHORT_SHARE[group]))
        n_long = n_group - n_short
        short = np.minimum(29, 1 + rng.geometric(1 / (_SHORT_MEAN - 1), n_short))
        if group == "test_short":
            short = _partition(calls - n_short, short - 1.0, 0, 28) + 1
        long_total = max(calls - int(short.sum()), 30 * n_long)
        extra = np.exp(rng.normal(math.log(_LONG_EXTRA_MED), _LONG_EXTRA_SD, n_long))
        long = _partition(long_total - 30 * n_long, extra, 0, _LONG_MAX - 30) + 30
        lo, hi = windows[split]
        sizes = [(int(x), True) for x in short] + [(int(x), False) for x in long]
        for n, is_short in sizes:
            sub = bool(rng.random() < _SUBAGENT_SHARE[is_short])
            kinds = SUB_KINDS if sub else MAIN_KINDS
            kind = kinds[int(rng.choice(len(kinds), p=[w for _, w in kinds]))][0]
            day = int(rng.integers(lo, hi))
            if (first_weekday + day) % 7 >= 5 and rng.random() < _WEEKEND_AVOID:
                day = int(rng.integers(lo, hi))
            interactive = not sub and bool(rng.random() < _INTERACTIVE)
            plans.append(_Plan(len(plans), split, is_short, n, sub, kind, interactive, day))
    _plan_calendar(plans, config, windows, rng)
    return plans


def _plan_calendar(
    plans: list[_Plan],
    config: SimulationConfig,
    windows: dict[str, tuple[int, int]],
    rng: np.random.Generator,
) -> None:
    """The retry-loop subagent; the corpus spans every day; client versions; parents."""
    upgrade = round(_UPGRADE_DAY * config.days / _STUDY_DAYS)
    runaway: _Plan | None = None
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
        runaway.day = min(max(round(_RUNAWAY_OFFSET.days * config.days / _STUDY_DAYS), lo), hi - 1)
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


def _adopt(child: _Plan, pool: list[_Plan], rng: np.random.Generator) -> None:
    """Pick the subagent's parent (longer sessions start more subagents); share its day."""
    if child.runaway:
        pool = [m for m in pool if m.day == child.day] or pool
    if not pool:
        return
    weights = np.array([m.n for m in pool], dtype=float)
    parent = pool[int(rng.choice(len(pool), p=weights / weights.sum()))]
    child.parent, child.day, child.new_era = parent.index, parent.day, parent.new_era
    parent.must.add(TOOL_INDEX[RENAMES["Task"] if parent.new_era else "Task"])


def _plan_mcp(plans: list[_Plan], scale: float, rng: np.random.Generator) -> None:
    """Spread each server's exact call budget over the sessions that use it."""
    used = np.zeros(len(plans))
    caps = np.array([0 if p.runaway else max(1, math.floor(_MCP_CAP * p.n)) for p in plans])
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
            idx.tolist(), _partition(budget, weights, 0, room[idx]).tolist(), strict=True
        ):
            if k > 0:
                plans[i].mcp[server.name] = int(k)
                used[i] += k


def _plan_coverage(plans: list[_Plan], rng: np.random.Generator) -> None:
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


# ---------------------------------------------------------------------------- sequences


class _Chain:
    """A session's habit matrix over one vocabulary (cumulative rows for fast sampling)."""

    def __init__(
        self,
        tools: list[int],
        weights: np.ndarray,
        affinity: np.ndarray,
        entry: np.ndarray,
        rng: np.random.Generator,
    ) -> None:
        self.tools = tools
        self.local = {t: i for i, t in enumerate(tools)}
        m = weights[None, :] * affinity * rng.gamma(_HABIT_SHAPE, 1.0, affinity.shape) + 1e-12
        cum = np.cumsum(m, axis=1) / m.sum(axis=1, keepdims=True)
        cum[:, -1] = 2.0  # any u < 1 lands on a tool
        self.rows: list[list[float]] = cum.tolist()
        e = np.cumsum(entry * weights)
        e = e / e[-1]
        e[-1] = 2.0
        self.entry: list[float] = e.tolist()

    def first(self, u: float) -> int:
        return self.tools[bisect.bisect_right(self.entry, u)]

    def next(self, prev: int, u: float) -> int:
        i = self.local.get(prev)
        row = self.entry if i is None else self.rows[i]
        return self.tools[bisect.bisect_right(row, u)]


def _vocabulary(
    base: np.ndarray, calls: int, rate: float, forced: np.ndarray, rng: np.random.Generator
) -> np.ndarray:
    """Indices of the tools a session works with: more (and rarer) tools in longer sessions."""
    include = rng.random(len(base)) < 1 - np.exp(-rate * base / base.sum())
    include[int(np.argmax(base * rng.gamma(2.0, 1.0, len(base))))] = True
    return np.flatnonzero(include | forced)


def _builtin_chain(p: _Plan, calls: int, rng: np.random.Generator) -> _Chain | None:
    if calls <= 0:
        return None
    kind = KIND_WEIGHTS[p.kind]
    names = [RENAMES.get(t, t) if p.new_era else t for t in kind]
    base = np.array(list(kind.values()), dtype=float)
    forced = np.array([TOOL_INDEX[x] in p.must for x in names])
    idx = _vocabulary(base, calls, _VOCAB_RATE * calls**_VOCAB_POWER, forced, rng)
    weights = base[idx] * rng.gamma(1.5, 1 / 1.5, len(idx))
    weights = np.maximum(weights, weights.sum() * _VOCAB_FLOOR / calls)
    tools = [TOOL_INDEX[names[i]] for i in idx]
    return _Chain(tools, weights, _kind_affinity(p.kind)[np.ix_(idx, idx)], np.ones(len(idx)), rng)


@functools.cache
def _kind_affinity(kind: str) -> np.ndarray:
    names = list(KIND_WEIGHTS[kind])
    return np.array([[AFFINITY.get((a, b), 1.0) for b in names] for a in names])


def _server_chain(
    server: ServerSpec, calls: int, must: set[int], rng: np.random.Generator
) -> _Chain:
    names = [t for t, _, _ in server.tools]
    full = [TOOL_INDEX[f"mcp__{server.name}__{t}"] for t in names]
    base = np.array([w for _, w, _ in server.tools], dtype=float)
    forced = np.array([t in must for t in full])
    if calls >= 2:  # an episode starts with its entry tool (navigate, authenticate, ...)
        forced[names.index(max(server.entry, key=server.entry.__getitem__))] = True
    idx = _vocabulary(base, calls, 2.0 * calls**0.7, forced, rng)
    weights = base[idx] * rng.gamma(1.5, 1 / 1.5, len(idx))
    weights = np.maximum(weights, weights.sum() / calls)
    sel = [names[i] for i in idx]
    affinity = np.array([[server.affinity.get((a, b), 1.0) for b in sel] for a in sel])
    entry = np.array([server.entry.get(a, 1.0) for a in sel])
    return _Chain([full[i] for i in idx], weights, affinity, entry, rng)


_MULTI_P_BY_TOOL: Final = [min(0.6, _MULTI_BASE * t.parallel) for t in ALL_TOOLS]
_FAIL_BY_TOOL: Final = np.array([t.fail for t in ALL_TOOLS])
_LOADER: Final = TOOL_INDEX[LAZY_MCP_LOADER]


def _segments(p: _Plan, rng: np.random.Generator) -> list[tuple[_Chain, int]]:
    """Built-in work cut into pieces with the session's MCP episodes between them."""
    n_mcp = sum(p.mcp.values())
    n_builtin = p.n - n_mcp
    builtin = _builtin_chain(p, n_builtin, rng)
    episodes: list[tuple[_Chain, int]] = []
    for server in SERVERS:
        budget = p.mcp.get(server.name, 0)
        if budget:
            chain = _server_chain(server, budget, p.must, rng)
            k = min(budget, 1 + int(rng.poisson(budget / 14)))
            sizes = _partition(budget, rng.gamma(2.0, 1.0, k), 1, budget).tolist()
            episodes += [(chain, int(size)) for size in sizes]
    episodes = [episodes[i] for i in rng.permutation(len(episodes))]
    cuts = np.sort(rng.integers(0, n_builtin + 1, len(episodes)))
    pieces = np.diff(np.r_[0, cuts, n_builtin]).tolist()
    segments: list[tuple[_Chain, int]] = []
    for i, piece in enumerate(pieces):
        if builtin is not None and piece > 0:
            segments.append((builtin, int(piece)))
        if i < len(episodes):
            segments.append(episodes[i])
    return segments


def _sequence(p: _Plan, rng: np.random.Generator) -> _Seq:
    """The session's calls: tools, response boundaries and failures."""
    segments = _segments(p, rng)
    u = iter(rng.random(8 * p.n + 16).tolist())
    fail_scale = float(rng.gamma(*_FAIL_GAMMA))
    fail_p: list[float] = np.minimum(0.9, _FAIL_BY_TOOL * fail_scale).tolist()
    multi_p = _MULTI_P_BY_TOOL
    log_q = math.log(1.0 - _MULTI_P)
    out = _Seq([], [], [])
    prev = retry = -1
    mcp_seen = False
    for chain, size in segments:
        is_mcp = ALL_TOOLS[chain.tools[0]].server is not None
        lazy = is_mcp and not mcp_seen and p.new_era and bool(out.tools)
        if lazy and ALL_TOOLS[out.tools[-1]].server is None:  # newer clients load MCP lazily
            out.tools[-1], out.failed[-1] = _LOADER, False
        mcp_seen |= is_mcp
        left = size
        first = True
        while left > 0:
            if retry in chain.local:
                t = retry
            elif first:
                t = chain.first(next(u))
            else:
                t = chain.next(prev, next(u))
            k = 1
            if next(u) < multi_p[t]:
                k = 2 + int(math.log(1.0 - next(u)) / log_q)
            if k > left:
                k = left
            retry = -1
            for j in range(k):
                if j > 0:
                    t = prev if next(u) < _SAME_TOOL_IN_RESPONSE else chain.next(prev, next(u))
                failed = next(u) < fail_p[t]
                out.tools.append(t)
                out.new_response.append(j == 0)
                out.failed.append(failed)
                if failed and next(u) < _RETRY_AFTER_FAILURE:
                    retry = t
                prev = t
            left -= k
            first = False
    _ensure_used(out, p.must, fail_p, rng)
    return out


def _ensure_used(s: _Seq, must: set[int], fail_p: list[float], rng: np.random.Generator) -> None:
    """A planned tool the chain happened not to draw replaces a repeated call of its kind."""
    missing = sorted(must.difference(s.tools))
    if not missing:
        return
    counts = Counter(s.tools)
    for t in missing:
        server = ALL_TOOLS[t].server
        spots = [
            i
            for i in range(1, len(s.tools))
            if ALL_TOOLS[s.tools[i]].server == server
            and s.tools[i] != _LOADER
            and counts[s.tools[i]] > 1
        ]
        if spots:
            i = spots[int(rng.integers(len(spots)))]
            counts[s.tools[i]] -= 1
            counts[t] += 1
            s.tools[i] = t
            s.failed[i] = bool(rng.random() < fail_p[t])


def _retry_loop(p: _Plan, s: _Seq, retries: int) -> None:
    """Overwrite the session's end with the refused call and its retries.

    A few ordinary calls come before and after (the subagent gives up); every refused call is
    its own model response.
    """
    n = len(s.tools)
    loop = min(retries + 1, max(0, n - 4))
    begin = max(1, n - loop - 3)
    tool = TOOL_INDEX[RETRY_TOOL]
    for i in range(begin, begin + loop):
        s.tools[i], s.new_response[i], s.failed[i] = tool, True, True
    if begin + loop < n:
        s.new_response[begin + loop] = True
    p.loop = (begin, begin + loop)


def _loop_rows(plans: Sequence[_Plan], lengths: np.ndarray) -> np.ndarray:
    """Row indices of the retry loop's refused calls (empty when there is none)."""
    first = np.cumsum(lengths) - lengths
    for p in plans:
        if p.runaway and p.loop[1] > p.loop[0]:
            return np.arange(p.loop[0], p.loop[1]) + int(first[p.index])
    return np.zeros(0, dtype=np.int64)


# ---------------------------------------------------------------------------- shapes and time


def _per_tool(attr: str) -> np.ndarray:
    return np.array([getattr(t, attr) for t in ALL_TOOLS], dtype=float)


def _shapes(
    tool: np.ndarray,
    failed: np.ndarray,
    session_of: np.ndarray,
    plans: Sequence[_Plan],
    rng: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Input bytes, result bytes and durations (seconds): per-tool log-normals."""
    n = len(tool)
    tails = [t.in_tail or (0.0, 1.0, 0.0) for t in ALL_TOOLS]
    tail_p, tail_med, tail_sd = (np.array(c)[tool] for c in zip(*tails, strict=True))
    in_sd = _per_tool("in_sd")[tool]
    session_size = rng.normal(0.0, _SESSION_SIZE_SD, len(plans))[session_of] * (in_sd > 0)
    z = rng.standard_normal(n)
    log_in = np.where(
        rng.random(n) < tail_p,
        np.log(tail_med) + tail_sd * z,
        np.log(_per_tool("in_med"))[tool] + in_sd * z + session_size,
    )
    input_bytes = np.maximum(2, np.round(np.exp(log_in))).astype(np.int64)

    bash = tool == TOOL_INDEX["Bash"]
    fail_mu = np.log(np.where(bash, _FAILED_OUT_BASH[0], _FAILED_OUT[0]))
    fail_sd = np.where(bash, _FAILED_OUT_BASH[1], _FAILED_OUT[1])
    z = rng.standard_normal(n)
    log_out = np.where(
        failed,
        fail_mu + fail_sd * z,
        np.log(_per_tool("out_med"))[tool] + _per_tool("out_sd")[tool] * z,
    )
    output_bytes = np.minimum(np.round(np.exp(log_out)), _OUT_MAX).astype(np.int64)

    d_sd = _per_tool("dur_sd")[tool]
    duration = np.exp(np.log(_per_tool("dur_med"))[tool] + d_sd * rng.standard_normal(n))
    interactive = np.array([p.interactive for p in plans])[session_of]
    approval = np.isin(tool, [TOOL_INDEX[t] for t in APPROVAL_TOOLS]) & interactive
    waits = approval & (rng.random(n) < _APPROVAL_SHARE)
    duration += waits * np.exp(math.log(_APPROVAL_MED) + _APPROVAL_SD * rng.standard_normal(n))
    return input_bytes, output_bytes, np.minimum(duration, _DURATION_MAX)


def _offsets(
    new_resp: np.ndarray,
    duration: np.ndarray,
    input_bytes: np.ndarray,
    session_of: np.ndarray,
    plans: Sequence[_Plan],
    loop_rows: np.ndarray,
    rng: np.random.Generator,
) -> np.ndarray:
    """Whole milliseconds from the session's first call to each call (int64).

    A call inside a response follows the previous one by a short streaming gap; the first call
    of a response follows the end of the previous response's tools by the model's latency.
    """
    n = len(new_resp)
    speed = np.exp(rng.normal(0.0, _SPEED_SD, len(plans)))[session_of]
    latency = _LATENCY_FLOOR + speed * np.exp(
        math.log(_LATENCY_MED) + _LATENCY_SD * rng.standard_normal(n)
    )
    interactive = np.array([p.interactive for p in plans])[session_of]
    turn_end = interactive & (rng.random(n) < _TURN_END)
    think = np.exp(math.log(_THINK_MED) + _THINK_SD * rng.standard_normal(n))
    latency += turn_end * np.minimum(think, _THINK_MAX)
    within = np.exp(math.log(_WITHIN_MED) + _WITHIN_SD * rng.standard_normal(n))
    within = np.clip(within * (input_bytes / 200.0) ** _WITHIN_SIZE_POWER, 0.005, 600.0)
    if len(loop_rows):
        mu, sd = _LOOP_LATENCY
        latency[loop_rows] = _LATENCY_FLOOR + rng.lognormal(math.log(mu), sd, len(loop_rows))
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


def _place(
    plans: Sequence[_Plan],
    seqs: Sequence[_Seq],
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
        lo, hi = (d * _DAY_US for d in windows[plans[i].split])
        starts[i] = max(lo, min(t0, hi - int(span[i]))) // 1000 * 1000

    def spawn_offset(parent: int) -> int:
        """µs from the parent's start to a random Task/Agent call of it (or any call)."""
        calls = [j for j, t in enumerate(seqs[parent].tools) if ALL_TOOLS[t].name in SUBAGENT_TOOLS]
        j = calls[int(rng.integers(len(calls)))] if calls else int(rng.integers(lengths[parent]))
        return int(offsets_ms[first[parent] + j]) * 1000

    runaway = next((p for p in plans if p.runaway), None)
    for p in plans:
        if not p.subagent:
            clamp(p.index, p.day * _DAY_US + int(_working_hour(rng) * 3600e6))
    if runaway is not None:
        t0 = runaway.day * _DAY_US + int(_RUNAWAY_OFFSET.seconds * 1e6 + rng.uniform(0, 240e6))
        clamp(runaway.index, t0)
        if runaway.parent >= 0:
            lead = spawn_offset(runaway.parent) + int(rng.uniform(2e6, 8e6))
            clamp(runaway.parent, int(starts[runaway.index]) - lead)
    for p in plans:
        if p.subagent and not p.runaway:
            if p.parent >= 0:
                t0 = starts[p.parent] + spawn_offset(p.parent) + int(rng.uniform(2e6, 8e6))
            else:
                t0 = p.day * _DAY_US + int(_working_hour(rng) * 3600e6)
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


# ---------------------------------------------------------------------------- records


def _to_table(
    config: SimulationConfig,
    plans: Sequence[_Plan],
    lengths: np.ndarray,
    tool: np.ndarray,
    new_resp: np.ndarray,
    failed: np.ndarray,
    input_bytes: np.ndarray,
    output_bytes: np.ndarray,
    duration: np.ndarray,
    start_us: np.ndarray,
) -> pa.Table:
    """Columnar Arrow table; ids are deterministic per configuration and unique within it."""
    n = len(tool)
    # ids depend on every setting, so two different corpora never share a call id
    keys = np.random.SeedSequence(
        [config.seed, config.sessions, _as_date(config.start).toordinal(), config.days,
         config.runaway_retries]
    ).generate_state(6, dtype=np.uint64)  # fmt: skip
    session_of = np.repeat(np.arange(len(plans)), lengths)
    counter = np.arange(len(plans), dtype=np.uint64)
    trace_hex = [
        f"{a:016x}{b:016x}"
        for a, b in zip(_mix(keys[0], counter), _mix(keys[1], counter), strict=True)
    ]
    agent_hex = [f"{x:016x}"[:8] for x in _mix(keys[2], counter)]
    # a subagent belongs to its parent's conversation: the parent's session id and trace, its
    # own agent id (as Claude Code's subagent files and the importer have it)
    owner = [p.parent if p.subagent and p.parent >= 0 else p.index for p in plans]
    trace_ids = [trace_hex[o] for o in owner]
    session_ids = [
        f"{SESSION_PREFIX}{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}" for h in trace_ids
    ]
    agent_ids = [agent_hex[p.index] if p.subagent else None for p in plans]
    response = (np.cumsum(new_resp) - 1).astype(np.uint64)
    calls = np.arange(n, dtype=np.uint64)
    span_ids = [f"{x:016x}" for x in _mix(keys[5], calls)]
    call_ids = [f"{CALL_PREFIX}{x:016x}" for x in _mix(keys[4], calls)]
    response_ids = [f"{RESPONSE_PREFIX}{x:016x}" for x in _mix(keys[3], response)]
    error_types = [ERROR_TYPE_TOOL_ERROR if f else None for f in failed.tolist()]
    seq = _conversation_positions(np.asarray(owner, dtype=np.int64)[session_of], start_us)
    names = [t.full_name for t in ALL_TOOLS]
    servers = [t.server for t in ALL_TOOLS]
    tl, so = tool.tolist(), session_of.tolist()
    columns: dict[str, pa.Array] = {
        "trace_id": pa.array([trace_ids[i] for i in so], pa.string()),
        "span_id": pa.array(span_ids, pa.string()),
        "session_id": pa.array([session_ids[i] for i in so], pa.string()),
        "agent_id": pa.array([agent_ids[i] for i in so], pa.string()),
        "seq": pa.array(seq.astype(np.int32)),
        "tool": pa.array([names[t] for t in tl], pa.string()),
        "server": pa.array([servers[t] for t in tl], pa.string()),
        "start_time": pa.array(start_us.astype(np.int64), pa.timestamp("us", tz="UTC")),
        "duration_us": pa.array(np.round(duration * 1e6).astype(np.int64)),
        "input_bytes": pa.array(input_bytes.astype(np.int64)),
        "output_bytes": pa.array(output_bytes.astype(np.int64)),
        "failed": pa.array(failed),
        "error_type": pa.array(error_types, pa.string()),
        "response_id": pa.array(response_ids, pa.string()),
        "call_id": pa.array(call_ids, pa.string()),
        "source": pa.array([SOURCE] * n, pa.string()),
        "service": pa.array([SERVICE] * n, pa.string()),
        "restamped": pa.array(np.zeros(n, dtype=bool)),
        "output_truncated": pa.array(np.zeros(n, dtype=bool)),
        "label": pa.nulls(n, pa.string()),
    }  # fmt: skip
    return pa.Table.from_arrays([columns[f.name] for f in CALLS_SCHEMA], schema=CALLS_SCHEMA)


# ============================================================================ helpers


def _conversation_positions(conversation: np.ndarray, start_us: np.ndarray) -> np.ndarray:
    """0-based position of each call in its conversation by start time (main agent and
    subagents together, as the importer and the instrumentation number ``seq``); ties keep
    row order."""
    n = len(conversation)
    order = np.lexsort((np.arange(n), start_us, conversation))
    grouped = conversation[order]
    starts = np.flatnonzero(np.r_[True, grouped[1:] != grouped[:-1]])
    rank = np.arange(n) - np.repeat(starts, np.diff(np.r_[starts, n]))
    seq = np.empty(n, dtype=np.int64)
    seq[order] = rank
    return seq


def _mix(key: np.uint64, counter: np.ndarray) -> list[int]:
    """SplitMix64 of ``key + counter``: a bijection, so distinct counters give distinct ids."""
    with np.errstate(over="ignore"):
        z = counter.astype(np.uint64) + key + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return list((z ^ (z >> np.uint64(31))).tolist())


def _partition(total: int, weights: np.ndarray, lo: int, hi: float | np.ndarray) -> np.ndarray:
    """Integers in [lo, hi] summing to ``total`` (clipped to what fits), ∝ ``weights``."""
    w = np.where(np.asarray(weights, dtype=float) > 0, weights, 1e-9)
    n = len(w)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    cap = np.broadcast_to(np.asarray(hi, dtype=float), (n,)).copy()
    total = int(min(max(total, lo * n), cap.sum()))
    x = np.full(n, float(lo))
    free = np.ones(n, dtype=bool)
    remaining = float(total - lo * n)
    while remaining > 1e-9 and free.any():  # water-filling: share, clip, re-share the excess
        x += remaining * w * free / (w * free).sum()
        over = x > cap
        remaining = float((x[over] - cap[over]).sum())
        x[over] = cap[over]
        free &= ~over
    out = np.floor(x + 1e-9).astype(np.int64)
    room = out < cap
    for i in np.argsort(-np.where(room, x - out, -1.0), kind="stable")[: total - int(out.sum())]:
        out[i] += 1
    return out


def _largest_remainder(quota: np.ndarray, total: int, minimum: int) -> np.ndarray:
    """Integers ≥ ``minimum`` summing to ``total``, as close to ``quota`` as possible."""
    quota = quota * total / quota.sum()
    out = np.maximum(minimum, np.floor(quota)).astype(np.int64)
    while out.sum() < total:
        out[int(np.argmax(quota - out))] += 1
    while out.sum() > total:
        out[int(np.argmax(np.where(out > minimum, out - quota, -np.inf)))] -= 1
    return out
