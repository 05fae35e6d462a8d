"""Step 1 of the protocol: whole sessions to train / calibration / test by their first call's
time (never shuffled), and a fingerprint of the data the split was cut from.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any

import numpy as np
import pyarrow as pa

from toolwatch.injection.experiment.config import ExperimentConfig, ExperimentError, parse_day
from toolwatch.injection.spans.session_arrays import INJECTION_COLUMNS, SessionCalls, split_sessions

log = logging.getLogger(__name__)


@dataclass
class Split:
    """Sessions of each split; ``test`` holds only sessions with enough calls."""

    train: list[SessionCalls]
    calibration: list[SessionCalls]
    test: list[SessionCalls]
    test_all: int  # test-split sessions before the minimum-length filter
    test_calls_all: int
    description: dict[str, Any]

    def summary(self) -> dict[str, Any]:
        def calls(sessions: Sequence[SessionCalls]) -> int:
            return int(sum(len(s) for s in sessions))

        return {
            "train": [len(self.train), calls(self.train)],
            "calibration": [len(self.calibration), calls(self.calibration)],
            "test": [len(self.test), calls(self.test)],
            "test_split_all": [self.test_all, self.test_calls_all],
            **self.description,
        }


def normal_sessions(calls: pa.Table) -> list[SessionCalls]:
    """Sessions of a call table, dropping any session that holds injected (labelled) calls."""
    sessions = split_sessions(calls, INJECTION_COLUMNS)
    return [s for s in sessions if all(v is None for v in s["label"])]


def split_by_time(sessions: Sequence[SessionCalls], config: ExperimentConfig) -> Split:
    """Assign whole sessions to train / calibration / test by their first call's time."""
    if not sessions:
        raise ExperimentError("the store holds no (uninjected) calls")
    first = np.array([int(s["start_time"][0]) for s in sessions], dtype=np.int64)
    order = np.lexsort((np.array([s.session_id for s in sessions], dtype=object), first))
    ordered = [sessions[i] for i in order]
    first = first[order]
    dates = config.effective_split_dates
    if dates is not None:
        train_end = _day_end_us(parse_day(dates[0]))
        calib_end = _day_end_us(parse_day(dates[1]))
        a = int(np.searchsorted(first, train_end, side="left"))
        b = int(np.searchsorted(first, calib_end, side="left"))
        desc: dict[str, Any] = {"mode": "dates", "train_end": dates[0], "calibration_end": dates[1]}
    else:
        assert config.split_shares is not None
        n = len(ordered)
        a = round(config.split_shares[0] * n)
        b = a + round(config.split_shares[1] * n)
        desc = {"mode": "shares", "shares": list(config.split_shares)}
    train, calib, test_all = ordered[:a], ordered[a:b], ordered[b:]
    span = _span(ordered)
    if not train or not test_all:
        hint = (
            " (the default dates are the study's; for another corpus use --split-shares or "
            "--split-dates)"
            if dates is not None
            else ""
        )
        raise ExperimentError(
            f"empty {'train' if not train else 'test'} split: {len(train)} train, "
            f"{len(calib)} calibration, {len(test_all)} test sessions; the corpus spans "
            f"{span}{hint}"
        )
    test = [s for s in test_all if len(s) >= config.min_calls]
    if not test:
        longest = max(len(s) for s in test_all)
        raise ExperimentError(
            f"no test session has >= {config.min_calls} calls ({len(test_all)} test sessions, "
            f"the longest has {longest}); lower --min-calls (with --head / --tail) or give "
            "the test split more sessions"
        )
    if not calib:
        log.warning("the calibration split is empty: the operating point is fitted on train")
    desc["corpus_span"] = span
    desc["data"] = data_fingerprint(ordered)
    return Split(
        train=train,
        calibration=calib,
        test=test,
        test_all=len(test_all),
        test_calls_all=int(sum(len(s) for s in test_all)),
        description=desc,
    )


def data_fingerprint(sessions: Sequence[SessionCalls]) -> dict[str, Any]:
    """What the split was cut from: streams, calls and a digest of every stream's identity,
    length and time range — so a re-run can tell whether the store's calls changed since."""
    h = hashlib.blake2b(digest_size=12)
    for s in sessions:
        t = s["start_time"]
        h.update(f"{stream_name(s)}\t{len(s)}\t{int(t[0])}\t{int(t[-1])}\n".encode())
    calls = int(sum(len(s) for s in sessions))
    return {"streams": len(sessions), "calls": calls, "digest": h.hexdigest()}


def _day_end_us(day: date) -> int:
    end = datetime(day.year, day.month, day.day, tzinfo=UTC) + timedelta(days=1)
    return int(end.timestamp() * 1_000_000)


def _span(sessions: Sequence[SessionCalls]) -> str:
    t = [int(s["start_time"][0]) for s in sessions]
    a = datetime.fromtimestamp(min(t) / 1e6, UTC).date().isoformat()
    b = datetime.fromtimestamp(max(t) / 1e6, UTC).date().isoformat()
    return f"{a}..{b}"


def stream_name(s: SessionCalls) -> str:
    """A stream's name in results: the session id, ``<session>/<agent>`` for a subagent."""
    agent = s["agent_id"][0]
    return s.session_id if agent is None else f"{s.session_id}/{agent}"
