"""Step 1 of the protocol: whole streams to train / calibration / test by their first call's
time (never shuffled; :mod:`toolwatch.detection.calls.split`, the rule every command shares),
and a fingerprint of the data the split was cut from.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from toolwatch import study
from toolwatch.detection.calls.split import placed_first, split_streams
from toolwatch.detection.calls.split_options import SplitError, SplitSpec
from toolwatch.injection.experiment.config import ExperimentConfig, ExperimentError
from toolwatch.injection.spans.session_arrays import INJECTION_COLUMNS, SessionCalls, split_sessions
from toolwatch.record import RECEIVED
from toolwatch.words import counted


@dataclass
class Split:
    """Streams of each split; ``test`` holds only the normal test streams (enough calls, no
    client artefact); ``artefacts`` the flagged streams kept apart, by quirk and split."""

    train: list[SessionCalls]
    calibration: list[SessionCalls]
    test: list[SessionCalls]
    test_all: int  # test-split streams before the minimum-length filter
    test_calls_all: int
    description: dict[str, Any]
    spec: SplitSpec
    artefacts: dict[str, dict[str, list[SessionCalls]]] = field(default_factory=dict)
    #: every stream of the test split (any length, artefacts too), in time order: a replay
    #: feeds them all, as they would arrive
    test_split: list[SessionCalls] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        def calls(sessions: Sequence[SessionCalls]) -> int:
            return int(sum(len(s) for s in sessions))

        return {
            "train": [len(self.train), calls(self.train)],
            "calibration": [len(self.calibration), calls(self.calibration)],
            "test": [len(self.test), calls(self.test)],
            "test_split_all": [self.test_all, self.test_calls_all],
            "artefacts": {
                q: {name: [len(g), calls(g)] for name, g in groups.items()}
                for q, groups in self.artefacts.items()
            },
            **self.description,
        }


def normal_sessions(calls: pa.Table) -> list[SessionCalls]:
    """Streams of a call table, dropping any stream that holds injected (labelled) calls; with
    the injection columns and the arrival mark (``received_time``: NaN without one), which the
    replay needs to tell a call stamped ahead of its arrival."""
    sessions = split_sessions(calls, (*INJECTION_COLUMNS, RECEIVED))
    return [s for s in sessions if all(v is None for v in s["label"])]


def split_by_time(sessions: Sequence[SessionCalls], config: ExperimentConfig) -> Split:
    """Assign whole streams to train / calibration / test by their first call's time (by
    their first arrival mark when that is more than the guard before it)."""
    if not sessions:
        raise ExperimentError("the store holds no (uninjected) calls")
    spec = config.split_spec()
    try:
        cut = split_streams(
            _first_stamps(sessions),
            [s.session_id for s in sessions],
            [s["agent_id"][0] for s in sessions],
            np.array([len(s) for s in sessions], dtype=np.int64),
            [_quirk(s) for s in sessions],
            spec,
            arrived_us=_first_marks(sessions),
        )
    except SplitError as exc:
        raise ExperimentError(str(exc)) from None

    def pick(idx: np.ndarray) -> list[SessionCalls]:
        return [sessions[i] for i in idx.tolist()]

    desc = {**cut.description, "data": data_fingerprint(sessions)}
    test_all = pick(cut.test_all)
    return Split(
        train=pick(cut.train),
        calibration=pick(cut.calibration),
        test=pick(cut.test),
        test_all=len(test_all),
        test_calls_all=int(sum(len(s) for s in test_all)),
        description=desc,
        spec=cut.resolved(spec),
        artefacts={
            q: {name: pick(idx) for name, idx in groups.items()}
            for q, groups in cut.artefacts.items()
        },
        test_split=test_all,
    )


def placed_at(sessions: Sequence[SessionCalls]) -> np.ndarray:
    """Each stream's place in time (µs) as :func:`split_by_time` places it: its first stamp, or
    its first arrival mark when stamped more than the guard after it (the replay's weeks)."""
    if not sessions:
        return np.empty(0, dtype=np.int64)
    return placed_first(_first_stamps(sessions), _first_marks(sessions))[0]


def _first_stamps(sessions: Sequence[SessionCalls]) -> np.ndarray:
    return np.array([int(s["start_time"][0]) for s in sessions], dtype=np.int64)


def _first_marks(sessions: Sequence[SessionCalls]) -> np.ndarray:
    return np.array([_first_mark(s) for s in sessions], dtype=np.float64)


def _first_mark(s: SessionCalls) -> float:
    """A stream's first arrival mark (µs), NaN when none of its calls has one."""
    marks = s.columns.get(RECEIVED)
    if marks is None or np.isnan(marks).all():
        return math.nan
    return float(np.nanmin(marks))


def _quirk(s: SessionCalls) -> str | None:
    col = s.columns.get("client_quirk")
    if col is None:
        return None
    flagged = [v for v in col.tolist() if v is not None]
    return str(flagged[0]) if flagged else None


def data_fingerprint(sessions: Sequence[SessionCalls]) -> dict[str, Any]:
    """What the split was cut from: streams, calls and a digest of every stream's identity,
    length and time range — so a re-run can tell whether the store's calls changed since."""
    h = hashlib.blake2b(digest_size=12)
    for s in sessions:
        t = s["start_time"]
        h.update(f"{stream_name(s)}\t{len(s)}\t{int(t[0])}\t{int(t[-1])}\n".encode())
    calls = int(sum(len(s) for s in sessions))
    return {"streams": len(sessions), "calls": calls, "digest": h.hexdigest()}


def stream_name(s: SessionCalls) -> str:
    """A stream's name in results: the session id, ``<session>/<agent>`` for a subagent."""
    agent = s["agent_id"][0]
    return s.session_id if agent is None else f"{s.session_id}/{agent}"


@dataclass(frozen=True)
class SplitRow:
    """One row of the split table: ours in streams and calls, the study's in sessions and calls
    (``None``: the study has no such row)."""

    name: str
    streams: int
    calls: int
    study: tuple[int, int] | None


def split_rows(split: Mapping[str, Any], min_calls: int) -> list[SplitRow]:
    """The split table of a run's :meth:`Split.summary` (saved with it as ``split_json``), one
    function for ``toolwatch experiment`` and the Detection page, so both list the same rows:
    train, calibration, the test streams injected into, and — when the summary has them — the
    test split's streams too short to inject into, the client artefacts kept apart and the
    total, so that the streams and calls add up to the data."""
    rows = [
        SplitRow(name, int(split[name][0]), int(split[name][1]), study.SPLITS[name])
        for name in ("train", "calibration")
    ]
    test = split["test"]
    rows.append(
        SplitRow(
            f"test (≥ {counted(min_calls, 'call')})",
            int(test[0]),
            int(test[1]),
            study.SPLITS["test"],
        )
    )
    if "test_split_all" not in split:  # a run saved before the summary counted them
        return rows
    groups = list(split.get("artefacts", {}).values())

    def kept(where: tuple[str, ...]) -> tuple[int, int]:
        found = [g[k] for g in groups for k in where if k in g]
        return int(sum(v[0] for v in found)), int(sum(v[1] for v in found))

    art_test = kept(("test",))
    short = [int(split["test_split_all"][i]) - int(test[i]) - art_test[i] for i in range(2)]
    rows.append(
        SplitRow(f"test (< {counted(min_calls, 'call')}, not injected)", short[0], short[1], None)
    )
    apart = kept(("train", "calibration", "test"))
    if apart[0]:
        rows.append(SplitRow("client artefacts (kept apart)", *apart, None))
    if "data" in split:
        data = split["data"]
        published = (int(study.CORPUS["sessions"]), int(study.CORPUS["calls"]))
        rows.append(SplitRow("total", int(data["streams"]), int(data["calls"]), published))
    return rows
