"""Steps 2 and 4 on the detection side: fit the normal model on train (operating point from
calibration) and score groups of sessions in one batch, each session its own stream.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Final

import numpy as np
import pyarrow as pa

from toolwatch.detection import CUE_SETS, DETECTORS, ModelConfig, NormalModel
from toolwatch.detection.calls.frame import CallFrame, prepare
from toolwatch.detection.detectors.names import stat_column
from toolwatch.injection.experiment.config import ExperimentConfig, ExperimentError
from toolwatch.injection.spans.session_arrays import SCORING_COLUMNS, SessionCalls, to_table

#: The provenance cue, beside the study's cue sets: per call, no detector accumulates it; its
#: operating point is the learned per-class thresholds (score 1).
PROVENANCE: Final = ("provenance", "point")
#: A (cue set, detector) pair.
Statistic = tuple[str, str]
#: The study's (cue set, detector) pairs.
STUDY_STATISTICS: Final[tuple[tuple[str, str], ...]] = tuple(
    (c, d) for c in CUE_SETS for d in DETECTORS
)
#: The novelty cue set (first uses mid-stream weighted by training rarity), every detector.
NOVELTY: Final[tuple[tuple[str, str], ...]] = tuple(("novelty", d) for d in DETECTORS)
#: Beyond the study's record: novelty always, provenance on a corpus that measured it.
BEYOND_STATISTICS: Final[tuple[tuple[str, str], ...]] = (*NOVELTY, PROVENANCE)
#: Every pair the experiment measures on a corpus with provenance: the study's, then the
#: cues beyond it.
STATISTICS: Final[tuple[tuple[str, str], ...]] = (*STUDY_STATISTICS, *BEYOND_STATISTICS)


def _run_session_id(run: int, original: SessionCalls) -> str:
    """Sortable, unique per run: batch scoring returns runs in this order."""
    agent = original["agent_id"][0]
    suffix = f"/{agent}" if agent is not None else ""
    return f"{run:07d}|{original.session_id}{suffix}"


def _batch_table(sessions: Sequence[SessionCalls]) -> pa.Table:
    """The scoring columns of many sessions, each renamed to its sortable run id (built as
    a dictionary column: cheaper than one Python string per call)."""
    others = [c for c in SCORING_COLUMNS if c != "session_id"]
    table = to_table(sessions, others)
    if not sessions:
        return table.add_column(0, "session_id", pa.array([], pa.string()))
    names = pa.array([_run_session_id(i, s) for i, s in enumerate(sessions)], pa.string())
    index = np.repeat(np.arange(len(sessions), dtype=np.int32), [len(s) for s in sessions])
    sid = pa.DictionaryArray.from_arrays(pa.array(index), names).dictionary_decode()
    return table.add_column(0, "session_id", sid)


def drop_response_ids(sessions: Iterable[SessionCalls]) -> list[SessionCalls]:
    """The ablation: the same calls with no response boundary recorded."""
    return [s.replace(response_id=np.full(len(s), None, dtype=object)) for s in sessions]


def fit_model(
    train: Sequence[SessionCalls], calibration: Sequence[SessionCalls], config: ExperimentConfig
) -> NormalModel:
    """The normal model fitted on train; its operating point from calibration (train if empty)."""
    model_config = ModelConfig.from_dict(dict(config.model))
    model = NormalModel.fit(to_table(train, SCORING_COLUMNS), model_config)
    return model.calibrate(to_table(calibration if calibration else train, SCORING_COLUMNS))


def operating_thresholds(model: NormalModel) -> dict[str, float]:
    """Operating-point threshold per ``<cue set>_<detector>`` column, from calibration (the
    provenance cue's: its learned thresholds, i.e. a score of 1)."""
    out = {f"{c}_{d}": float(model.threshold(c, d)) for c in CUE_SETS for d in DETECTORS}
    out[stat_column(*PROVENANCE)] = 1.0
    if model.novelty is not None:
        for det, value in model.novelty.thresholds.items():
            out[stat_column("novelty", det)] = float(value)
    return out


def score_groups(
    model: NormalModel, groups: Sequence[Sequence[SessionCalls]]
) -> list[dict[str, np.ndarray]]:
    """Detector statistics per ``<cue set>_<detector>`` column for groups of sessions.

    Everything is scored in ONE batch (the batch scorer's cost grows with the longest
    session, not with the number of sessions), each session its own stream, so a session's
    scores depend on that session only. Results come back per group, in each group's call
    order.
    """
    flat = [s for group in groups for s in group]
    sizes = [int(sum(len(s) for s in group)) for group in groups]
    table = _batch_table(flat)
    frame = prepare(table)  # once: the study's statistics and those beyond it share it
    if not frame.table.column("session_id").equals(table.column("session_id")):
        raise ExperimentError("batch scoring returned calls in an unexpected order")
    values = model.score_frame(frame)
    columns = {
        f"{c}_{d}": np.asarray(values[f"{c}_{d}"], dtype=np.float64)
        for c in CUE_SETS
        for d in DETECTORS
    }
    columns.update(beyond_scores(model, frame))
    bounds = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    return [
        {k: v[bounds[g] : bounds[g + 1]] for k, v in columns.items()} for g in range(len(groups))
    ]


def beyond_scores(model: NormalModel, frame: CallFrame) -> dict[str, np.ndarray]:
    """The statistics beyond the study's per call of ``frame``, in the order of the table it
    was prepared from: the provenance cue's score (zeros for a model without it) and the
    novelty cue set's detector statistics."""
    n = frame.table.num_rows
    out = {stat_column(*PROVENANCE): np.zeros(n)}
    out.update({f"{c}_{d}": np.zeros(n) for c, d in NOVELTY})
    if n == 0:
        return out

    def in_row_order(values: np.ndarray) -> np.ndarray:
        placed = np.empty(n)
        placed[frame.order] = values
        return placed

    if model.provenance is not None:
        out[stat_column(*PROVENANCE)] = in_row_order(model.provenance.score_many(frame))
    for name, values in model.novelty_statistics(frame).items():
        if name in out:
            out[name] = in_row_order(values)
    return out
