"""The split by time every command shares: which streams train, calibrate and get tested.

The unit is the **stream**, one ``(session_id, agent_id)`` pair (a subagent is a stream of its
own, as the study counted it), placed by its first call; streams are never cut in two and never
shuffled. ``toolwatch train``, ``experiment``, ``scan`` and ``replay`` take the same options
(:func:`~toolwatch.detection.calls.split_options.add_split_arguments`) and mean the same by them:

* ``--split-dates TRAIN_END,CALIB_END``: streams starting on or before ``TRAIN_END`` (UTC,
  inclusive) train, those up to ``CALIB_END`` calibrate, every later one is the test split;
* ``--split-shares TRAIN,CALIB``: of the streams ordered by first call (ties by session id,
  then agent id, the main agent first), the first ``round(TRAIN·n)`` train and the next
  ``round(CALIB·n)`` calibrate (0.44,0.07 are the study's proportions of its 422 sessions);
* neither: the study's proportions of the *days* the streams span (the first 21/42 train, the
  next 7/42 calibrate: on the study's calendar, its dates 2026-08-24 and 2026-08-31), or, when
  that leaves a split empty (few days, traffic in bursts), the study's proportions of streams;
* ``--min-calls N``: test streams need at least ``N`` calls (the study: 30).

**A client clock ahead.** A stream's first call is its first stamp, unless the stream has an
arrival mark (``received_time``: the collector's clock when it stored the call) and its first
stamp is more than :data:`~toolwatch.detection.calls.clock.CLOCK_AHEAD_S` after its first mark:
then it is placed by its first mark (a client a year fast would otherwise put its stream in the
test split, and stretch the default rule's days by a year). The description counts such
streams (``placed_by_arrival``; :func:`placed_by_arrival_line` says it in one line).

**Client artefacts.** Streams an importer flagged as a Claude Code warm-up subagent
(``client_quirk = warmup_agent``: the client's own start-up probe, every call answered by an
error) are not the user's behaviour: they are kept out of training, calibration and the normal
test streams, and reported apart (:attr:`StreamSplit.artefacts`), unless
``--include-client-artefacts`` (a named variant; its measured effect is in
``docs/ARCHITECTURE.md``). Claude Code's forks (``compaction_fork``, ``aside_question_fork``,
``prompt_suggestion_fork``, ``session_memory_fork``) are the main thread's real calls under
another agent id and stay normal streams everywhere.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import Any, Final

import numpy as np
import pyarrow as pa

from toolwatch import study
from toolwatch.collector.store.arrow_schema import CALLS_SCHEMA
from toolwatch.collector.store.parquet_store import Store
from toolwatch.conventions import QUIRK_WARMUP_AGENT
from toolwatch.detection.calls.clock import CLOCK_AHEAD_S
from toolwatch.detection.calls.split_options import (
    SplitError,
    SplitSpec,
    parse_day,
)
from toolwatch.detection.calls.windows import call_columns_sql
from toolwatch.record import RECEIVED
from toolwatch.words import counted

#: Client quirks kept out of learning and out of the normal test streams by default.
LEARNING_EXCLUDED_QUIRKS: Final[tuple[str, ...]] = (QUIRK_WARMUP_AGENT,)
#: The study's proportions of its sessions (185 train, 28 calibration of 422): the fallback
#: shares when a split by days leaves a window empty.
STUDY_SHARES: Final = (
    study.SPLITS["train"][0] / study.CORPUS["sessions"],
    study.SPLITS["calibration"][0] / study.CORPUS["sessions"],
)
_US_PER_DAY: Final = 86_400_000_000


@dataclass(frozen=True)
class StreamSplit:
    """Indices into the streams given to :func:`split_streams`, each group in time order."""

    train: np.ndarray
    calibration: np.ndarray
    #: the whole test split (every length; artefacts included)
    test_all: np.ndarray
    #: the normal test streams: test split, >= min_calls calls, no excluded artefact
    test: np.ndarray
    #: quirk -> split name -> indices of the flagged streams kept out of that split
    artefacts: dict[str, dict[str, np.ndarray]] = field(default_factory=dict)
    #: how the split was made, JSON-ready (mode, dates or shares, the resolved cut)
    description: dict[str, Any] = field(default_factory=dict)

    def resolved(self, spec: SplitSpec) -> SplitSpec:
        """``spec`` with the default replaced by the dates or shares actually used."""
        d = self.description
        if d["mode"] == "dates":
            return SplitSpec(
                (d["train_end"], d["calibration_end"]), None, spec.min_calls, spec.include_artefacts
            )
        return SplitSpec(None, tuple(d["shares"]), spec.min_calls, spec.include_artefacts)


def split_streams(
    first_us: np.ndarray,
    session_ids: Sequence[str],
    agent_ids: Sequence[str | None],
    calls: np.ndarray,
    quirks: Sequence[str | None],
    spec: SplitSpec,
    *,
    need_test: bool = True,
    arrived_us: np.ndarray | None = None,
) -> StreamSplit:
    """Split streams (one entry each: first call time in µs, ids, length, client quirk);
    ``need_test=False`` (``toolwatch train``, which never reads it) accepts a test split that
    is empty or holds no stream of ``min_calls`` (:attr:`StreamSplit.test` is then empty);
    ``arrived_us``: each stream's first arrival mark (µs, NaN: none), which places a stream
    whose first stamp is ahead of it (module docstring)."""
    n = len(session_ids)
    if n == 0:
        raise SplitError("there are no (uninjected) streams to split")
    first, placed = placed_first(first_us, arrived_us)
    agents = np.array(["" if a is None else "\x01" + a for a in agent_ids], dtype=object)
    order = np.lexsort((agents, np.asarray(session_ids, dtype=object), first))
    first_sorted = first[order]
    desc: dict[str, Any]
    if spec.shares is not None:
        a, b = _share_cuts(n, spec.shares)
        desc = {"mode": "shares", "shares": list(spec.shares)}
    elif spec.dates is not None:
        a, b = _date_cuts(first_sorted, spec.dates)
        desc = {"mode": "dates", "train_end": spec.dates[0], "calibration_end": spec.dates[1]}
    else:
        dates = _default_dates(first_sorted)
        a, b = _date_cuts(first_sorted, dates)
        desc = {"mode": "dates", "train_end": dates[0], "calibration_end": dates[1]}
        if a == 0 or b in (a, n):
            a, b = _share_cuts(n, STUDY_SHARES)
            desc = {"mode": "shares", "shares": [round(s, 6) for s in STUDY_SHARES]}
        desc["default"] = True
    groups = {"train": order[:a], "calibration": order[a:b], "test": order[b:]}
    if len(groups["train"]) == 0 or (need_test and len(groups["test"]) == 0):
        empty = "train" if len(groups["train"]) == 0 else "test"
        hint = (
            " (for another corpus use --split-shares, or --split-dates within its days)"
            if spec.dates is not None
            else ""
        )
        raise SplitError(
            f"empty {empty} split: {a} train, {b - a} calibration, "
            f"{counted(n - b, 'test stream')}; "
            f"the streams start {_day(first_sorted[0])}..{_day(first_sorted[-1])}{hint}"
        )
    quirk = np.array(quirks, dtype=object)
    excluded = (
        np.zeros(n, dtype=bool)
        if spec.include_artefacts
        else np.isin(quirk, np.array(LEARNING_EXCLUDED_QUIRKS, dtype=object))
    )
    artefacts: dict[str, dict[str, np.ndarray]] = {}
    for q in LEARNING_EXCLUDED_QUIRKS:
        mine = excluded & (quirk == q)
        if mine.any():
            artefacts[q] = {name: idx[mine[idx]] for name, idx in groups.items()}
    long = np.asarray(calls, dtype=np.int64) >= spec.min_calls
    test_all = groups["test"]
    test = test_all[long[test_all] & ~excluded[test_all]]
    if len(test) == 0 and need_test:
        longest = int(np.asarray(calls)[test_all].max())
        raise SplitError(
            f"no test stream has >= {counted(spec.min_calls, 'call')} "
            f"({counted(len(test_all), 'test stream')}, the "
            f"longest has {longest}); lower --min-calls or give the test split more streams"
        )
    desc["streams_span"] = f"{_day(first_sorted[0])}..{_day(first_sorted[-1])}"
    desc["placed_by_arrival"] = placed
    return StreamSplit(
        train=groups["train"][~excluded[groups["train"]]],
        calibration=groups["calibration"][~excluded[groups["calibration"]]],
        test_all=test_all,
        test=test,
        artefacts=artefacts,
        description=desc,
    )


def placed_first(first_us: np.ndarray, arrived_us: np.ndarray | None) -> tuple[np.ndarray, int]:
    """Each stream's place in time (µs): its first stamp, or its first arrival mark when the
    stamp is more than the guard after it; and how many streams are placed by their mark."""
    first = np.asarray(first_us, dtype=np.int64)
    if arrived_us is None:
        return first, 0
    arrived = np.asarray(arrived_us, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        ahead = ~np.isnan(arrived) & (first > arrived + CLOCK_AHEAD_S * 1e6)
    if not ahead.any():
        return first, 0
    return np.where(ahead, np.nan_to_num(arrived).astype(np.int64), first), int(ahead.sum())


def rule_given(description: Mapping[str, Any]) -> str:
    """The option a split's description stands for (``--split-shares 0.44,0.07``), marked
    when it is the default rule: how ``train`` and ``scan`` name the split they used."""
    d = description
    given = (
        f"--split-shares {d['shares'][0]},{d['shares'][1]}"
        if d["mode"] == "shares"
        else f"--split-dates {d['train_end']},{d['calibration_end']}"
    )
    return given + (" (the default rule)" if d.get("default") else "")


def placed_by_arrival_line(description: Mapping[str, Any]) -> str:
    """One line naming the streams placed by their arrival (a split's description), or ``""``."""
    n = int(description.get("placed_by_arrival", 0))
    if not n:
        return ""
    one = n == 1
    clock = "its client's clock" if one else "their clients' clocks"
    return (
        f"{counted(n, 'stream')} placed by {'its' if one else 'their'} arrival, not "
        f"{'its' if one else 'their'} first stamp: stamped more than {CLOCK_AHEAD_S / 60:g} min "
        f"after the collector received {'it' if one else 'them'} (received_time), {clock} ahead"
    )


def _share_cuts(n: int, shares: tuple[float, float]) -> tuple[int, int]:
    a = round(shares[0] * n)
    return a, min(n, a + round(shares[1] * n))


def _date_cuts(first_sorted: np.ndarray, dates: tuple[str, str]) -> tuple[int, int]:
    ends = [_day_end_us(parse_day(d)) for d in dates]
    a = int(np.searchsorted(first_sorted, ends[0], side="left"))
    return a, int(np.searchsorted(first_sorted, ends[1], side="left"))


def _default_dates(first_sorted: np.ndarray) -> tuple[str, str]:
    """The study's 21/42 and 7/42 of the days from the first stream's day to the last's."""
    day0 = int(first_sorted[0]) // _US_PER_DAY
    days = int(first_sorted[-1]) // _US_PER_DAY - day0 + 1
    train_days = max(1, round(days * study.TRAIN_SHARE))
    cal_days = max(1, round(days * study.CALIBRATE_SHARE))
    start = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(days=day0)
    train_end = start + timedelta(days=train_days - 1)
    return (train_end.date().isoformat(), (train_end + timedelta(days=cal_days)).date().isoformat())


def _day_end_us(day: date) -> int:
    end = datetime(day.year, day.month, day.day, tzinfo=UTC) + timedelta(days=1)
    return int(end.timestamp() * 1_000_000)


def _day(us: int) -> str:
    return datetime.fromtimestamp(int(us) / 1e6, UTC).date().isoformat()


# ------------------------------------------------------------------------------ a store's split


@dataclass(frozen=True)
class StoreSplit:
    """A store's normal streams split by :func:`split_streams`, with their calls on demand."""

    store: Store
    streams: pa.Table  # one row per normal stream: session_id, agent_id, first, calls, quirk
    split: StreamSplit
    spec: SplitSpec

    def calls(self, group: str) -> pa.Table:
        """The calls (``CALLS_SCHEMA``) of one group: train, calibration, test_all or test."""
        idx: np.ndarray = getattr(self.split, group)
        sessions = self.streams.column("session_id").to_pylist()
        agents = self.streams.column("agent_id").to_pylist()
        keys = [_stream_key(sessions[i], agents[i]) for i in idx.tolist()]
        if not keys:
            return CALLS_SCHEMA.empty_table()
        columns = call_columns_sql(self.store, "c")
        table = self.store.query(
            f"SELECT {columns} FROM calls c WHERE c.session_id || chr(31) || "
            "coalesce(c.agent_id, chr(30)) IN (SELECT unnest(?::VARCHAR[]))",
            [keys],
        )
        return table.cast(CALLS_SCHEMA) if table.num_rows else CALLS_SCHEMA.empty_table()

    def placed_us(self) -> np.ndarray:
        """Each stream's place in time (µs) as the split placed it (:func:`placed_first`): its
        first stamp, or its first arrival mark when stamped more than the guard after it."""
        return placed_first(_micros(self.streams, "first"), _marks(self.streams))[0]

    def count(self, group: str) -> tuple[int, int]:
        """(streams, calls) of a group."""
        idx: np.ndarray = getattr(self.split, group)
        calls = np.asarray(self.streams.column("calls").to_numpy(), dtype=np.int64)
        return len(idx), int(calls[idx].sum())


def split_store(store: Store, spec: SplitSpec, *, need_test: bool = True) -> StoreSplit:
    """Split a store's normal (unlabelled) streams; :class:`SplitError` if it cannot be
    (``need_test``: as :func:`split_streams`)."""
    present = _view_columns(store)
    quirk = "max(client_quirk)" if "client_quirk" in present else "NULL"
    arrived = f"min({RECEIVED})" if RECEIVED in present else "CAST(NULL AS TIMESTAMPTZ)"
    streams = store.query(
        f"""
        SELECT session_id, agent_id, min(start_time) AS first, count(*) AS calls,
               {quirk} AS quirk, {arrived} AS arrived
        FROM calls GROUP BY session_id, agent_id HAVING count(label) = 0
        ORDER BY session_id, agent_id NULLS FIRST
        """
    )
    if streams.num_rows == 0:
        raise SplitError(f"the store {store.root} holds no (uninjected) calls")
    split = split_streams(
        _micros(streams, "first"),
        streams.column("session_id").to_pylist(),
        streams.column("agent_id").to_pylist(),
        np.asarray(streams.column("calls").to_numpy(), dtype=np.int64),
        streams.column("quirk").to_pylist(),
        spec,
        need_test=need_test,
        arrived_us=_marks(streams),
    )
    return StoreSplit(store, streams, split, spec)


def _micros(streams: pa.Table, column: str) -> np.ndarray:
    """A time column of the streams table in µs (int64)."""
    return (
        streams.column(column)
        .cast(pa.timestamp("us", tz="UTC"))
        .cast(pa.int64())
        .to_numpy(zero_copy_only=False)
    )


def _marks(streams: pa.Table) -> np.ndarray:
    """Each stream's first arrival mark in µs (float64, NaN: none)."""
    return (
        streams.column("arrived")
        .cast(pa.timestamp("us", tz="UTC"))
        .cast(pa.int64())
        .cast(pa.float64())
        .to_numpy(zero_copy_only=False)
    )


def _view_columns(store: Store) -> set[str]:
    return set(store.query("SELECT * FROM calls LIMIT 0").column_names)


def _stream_key(session_id: str, agent_id: str | None) -> str:
    return f"{session_id}\x1f{chr(30) if agent_id is None else agent_id}"
