"""The study's injection experiment (BRIEF §3), end to end, on any store's calls.

Protocol, step by step (every choice is in :class:`ExperimentConfig`, saved with the results):

1. **Split by time**, never shuffled: sessions (streams: a subagent is a session of its own)
   are assigned by their first call to train / calibration / test, either by date (the study's
   dates by default) or by shares of sessions ordered by start time.
2. **Fit** the normal model on train; its operating point comes from calibration.
3. **Test sessions** are the test-split sessions with at least ``min_calls`` calls.
4. **Inject**: per seed and test session one insertion point (between call ``head`` and
   ``tail`` calls before the end, at a response boundary) shared by every kind; per kind one
   injected copy of the session. All injected sessions of a kind are scored in one batch; every
   session is its own stream, so its scores depend on that session only.
5. **Thresholds** per cue set × detector, two modes: ``fa_target`` — from one grid (the normal
   test sessions' maxima), the smallest threshold at which at most ``target_fa`` of normal test
   sessions ever alarm (the level actually reached is reported); ``operating_point`` — the
   model's calibration thresholds, with the false-alarm rate they reach on the test sessions.
6. **Metrics** (:mod:`toolwatch.injection.experiment.metrics`): detection within the window,
latency,
   bootstrap intervals over sessions, per-call AUC (inserted calls vs the other calls of the
   injected sessions, ranked by the cue set's per-call score).
7. **Ablation** ``no_response_ids``: the same injected sessions with every response id dropped
   (train and calibration too): every gap becomes a different-response gap.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import Any, Final

import numpy as np
import pyarrow as pa

from toolwatch import study, tables
from toolwatch.collector.store.arrow_schema import SCHEMAS
from toolwatch.detection import CUE_SETS, DETECTORS, NormalModel, score_calls
from toolwatch.injection.experiment import metrics as M
from toolwatch.injection.spans.anomalies import (
    DEFAULT_PARAMS,
    KINDS,
    NOTE_MID_RESPONSE,
    NOTE_READ_PAIR,
    InjectionContext,
    InjectionError,
    KindParams,
    SessionCalls,
    draw_position,
    inject,
    params_from_dict,
    params_to_dict,
)
from toolwatch.injection.spans.session_arrays import (
    INJECTION_COLUMNS,
    SCORING_COLUMNS,
    split_sessions,
    to_table,
)

log = logging.getLogger(__name__)

MODES: Final[tuple[str, ...]] = ("fa_target", "operating_point")
VARIANTS: Final[tuple[str, ...]] = ("standard", "no_response_ids")
NORMAL: Final = "normal"


class ExperimentError(ValueError):
    """The experiment cannot run on this corpus / configuration (the message says why)."""


# ------------------------------------------------------------------------------ config


def default_split_dates() -> tuple[str, str]:
    """The study's split (the simulator's ``SPLIT_DATES``): last day of training and of
    calibration, inclusive; the test split is everything after."""
    from toolwatch.collector.sources.simulator import SPLIT_DATES

    return (SPLIT_DATES["train"][1], SPLIT_DATES["calibration"][1])


@dataclass(frozen=True)
class ExperimentConfig:
    """Everything that determines an experiment's numbers (saved as JSON with the results)."""

    split_dates: tuple[str, str] | None = None  # (train_end, calibration_end), inclusive days
    split_shares: tuple[float, float] | None = None  # (train, calibration) shares of sessions
    min_calls: int = study.TEST_MIN_CALLS
    seeds: tuple[int, ...] = (0, 1, 2, 3, 4)
    target_fa: float = 0.05
    bootstrap: int = 2000
    bootstrap_seed: int = 0
    head: int = 10
    tail: int = 10
    kinds: tuple[str, ...] = KINDS
    params: Mapping[str, KindParams] = field(default_factory=lambda: dict(DEFAULT_PARAMS))
    ablation: bool = True
    model: Mapping[str, Any] = field(default_factory=dict)  # ModelConfig overrides

    def __post_init__(self) -> None:
        if self.split_dates is not None and self.split_shares is not None:
            raise ExperimentError("give split dates or split shares, not both")
        if self.split_shares is not None:
            a, b = self.split_shares
            if not (0 < a < 1 and 0 <= b < 1 and a + b < 1):
                raise ExperimentError(
                    f"split shares {a},{b}: need 0 < train < 1, 0 <= calibration, sum < 1"
                )
        if self.split_dates is not None:
            a_day, b_day = (_parse_day(d) for d in self.split_dates)
            if b_day < a_day:
                raise ExperimentError(
                    f"split dates {self.split_dates[0]},{self.split_dates[1]}: "
                    "calibration must end on or after the end of training"
                )
        if self.head < 1 or self.tail < 0:
            raise ExperimentError(
                f"--head {self.head} / --tail {self.tail}: need head >= 1, tail >= 0"
            )
        if self.min_calls < self.head + self.tail + 1:
            raise ExperimentError(
                f"--min-calls {self.min_calls} leaves no insertion point between call "
                f"{self.head} and {self.tail} calls before the end (raise --min-calls to at "
                f"least {self.head + self.tail + 1}, or lower --head / --tail)"
            )
        if not self.seeds:
            raise ExperimentError("at least one seed is needed")
        if not 0 <= self.target_fa < 1:
            raise ExperimentError(f"target false-alarm rate {self.target_fa} is not in [0, 1)")
        unknown = [k for k in self.kinds if k not in KINDS]
        if unknown:
            raise ExperimentError(f"unknown kinds {unknown} (known: {', '.join(KINDS)})")
        from toolwatch.detection import ModelConfig

        try:
            ModelConfig.from_dict(dict(self.model))
        except (ValueError, TypeError) as exc:
            raise ExperimentError(f"model configuration: {exc}") from None

    @property
    def effective_split_dates(self) -> tuple[str, str] | None:
        if self.split_shares is not None:
            return None
        return self.split_dates or default_split_dates()

    def to_dict(self) -> dict[str, Any]:
        """Everything resolved (default split dates, every model knob), so that
        :meth:`from_dict` of it repeats the run exactly even if a default changes later."""
        from toolwatch.detection import ModelConfig

        d = asdict(self)
        d["params"] = params_to_dict(self.params)
        d["model"] = ModelConfig.from_dict(dict(self.model)).to_dict()
        d["split_dates"] = self.effective_split_dates
        return d

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ExperimentConfig:
        d = dict(data)
        if d.get("split_shares") is not None:
            d["split_dates"] = None
        for key in ("split_dates", "split_shares", "seeds", "kinds"):
            if d.get(key) is not None:
                d[key] = tuple(d[key])
        if "params" in d:
            d["params"] = params_from_dict(d["params"])
        return cls(**d)


def _parse_day(text: str) -> date:
    try:
        return date.fromisoformat(text.strip())
    except ValueError:
        raise ExperimentError(f"split date {text!r} is not an ISO date (YYYY-MM-DD)") from None


# ------------------------------------------------------------------------------ split


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
        train_end = _day_end_us(_parse_day(dates[0]))
        calib_end = _day_end_us(_parse_day(dates[1]))
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
        h.update(f"{_stream_name(s)}\t{len(s)}\t{int(t[0])}\t{int(t[-1])}\n".encode())
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


# ------------------------------------------------------------------------------ runs


@dataclass
class KindRuns:
    """The injected sessions of one kind, seed-major, with where each anomaly sits."""

    kind: str
    sessions: list[SessionCalls]
    seed: np.ndarray  # per run
    session_index: np.ndarray  # per run: index into the test sessions
    positions: np.ndarray
    inserted: np.ndarray
    notes: list[str]
    skipped: dict[str, int]  # reason -> runs that could not be placed

    @property
    def layout(self) -> M.RunLayout:
        lengths = np.array([len(s) for s in self.sessions], dtype=np.int64)
        return M.RunLayout.build(lengths, self.positions, self.inserted)

    def note_counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for n in self.notes:
            if n:
                out[n] = out.get(n, 0) + 1
        return out


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


def build_runs(
    test: Sequence[SessionCalls],
    context: InjectionContext,
    config: ExperimentConfig,
    kinds: Sequence[str] | None = None,
    progress: Callable[[int], Any] | None = None,
) -> dict[str, KindRuns]:
    """Inject every kind once per (seed, test session).

    The insertion point is drawn once per (seed, session) from ``default_rng([seed, i])`` and
    shared by every kind; a kind's own randomness comes from ``default_rng([seed, i, 1 + k])``
    (``k`` its index in :data:`KINDS`), so a subset of kinds reproduces the same runs.
    """
    kinds = tuple(kinds or config.kinds)
    acc: dict[str, dict[str, Any]] = {
        k: {"sessions": [], "seed": [], "index": [], "pos": [], "ins": [], "notes": [], "skip": {}}
        for k in kinds
    }
    for seed in config.seeds:
        for i, s in enumerate(test):
            position = draw_position(
                s, np.random.default_rng([seed, i]), head=config.head, tail=config.tail
            )
            bounds = (config.head, len(s) - config.tail)
            for kind in kinds:
                a = acc[kind]
                rng = np.random.default_rng([seed, i, 1 + KINDS.index(kind)])
                params = config.params.get(kind, DEFAULT_PARAMS[kind])
                try:
                    inj = inject(kind, s, position, rng, context, params, bounds=bounds)
                except InjectionError as exc:
                    a["skip"][str(exc)] = a["skip"].get(str(exc), 0) + 1
                    continue
                a["sessions"].append(inj.calls)
                a["seed"].append(seed)
                a["index"].append(i)
                a["pos"].append(inj.position)
                a["ins"].append(inj.inserted)
                a["notes"].append(inj.note)
        if progress:
            progress(1)
    return {
        k: KindRuns(
            kind=k,
            sessions=a["sessions"],
            seed=np.array(a["seed"], dtype=np.int64),
            session_index=np.array(a["index"], dtype=np.int64),
            positions=np.array(a["pos"], dtype=np.int64),
            inserted=np.array(a["ins"], dtype=np.int64),
            notes=a["notes"],
            skipped=a["skip"],
        )
        for k, a in acc.items()
    }


# ------------------------------------------------------------------------------ detection glue


def drop_response_ids(sessions: Iterable[SessionCalls]) -> list[SessionCalls]:
    """The ablation: the same calls with no response boundary recorded."""
    return [s.replace(response_id=np.full(len(s), None, dtype=object)) for s in sessions]


def fit_model(
    train: Sequence[SessionCalls], calibration: Sequence[SessionCalls], config: ExperimentConfig
) -> NormalModel:
    from toolwatch.detection import ModelConfig

    model_config = ModelConfig.from_dict(dict(config.model))
    model = NormalModel.fit(to_table(train, SCORING_COLUMNS), model_config)
    return model.calibrate(to_table(calibration if calibration else train, SCORING_COLUMNS))


def operating_thresholds(model: NormalModel) -> dict[str, float]:
    """Operating-point threshold per ``<cue set>_<detector>`` column, from calibration."""
    return {f"{c}_{d}": float(model.threshold(c, d)) for c in CUE_SETS for d in DETECTORS}


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
    scored = score_calls(model, table)
    if not scored.column("session_id").equals(table.column("session_id")):
        raise ExperimentError("batch scoring returned calls in an unexpected order")
    columns = {
        f"{c}_{d}": scored.column(f"{c}_{d}").to_numpy(zero_copy_only=False).astype(np.float64)
        for c in CUE_SETS
        for d in DETECTORS
    }
    bounds = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    return [
        {k: v[bounds[g] : bounds[g + 1]] for k, v in columns.items()} for g in range(len(groups))
    ]


# ------------------------------------------------------------------------------ results


@dataclass(frozen=True)
class Threshold:
    value: float
    fa_reached: float


@dataclass
class CellResult:
    """One (variant, kind, cue set, detector, threshold mode)."""

    variant: str
    kind: str
    cue_set: str
    detector: str
    mode: str
    threshold: float
    fa_reached: float
    runs: int
    detected: int
    rate: float
    ci_low: float
    ci_high: float
    median_latency: float
    auc: float

    def key(self) -> tuple[str, str, str, str, str]:
        return (self.variant, self.kind, self.cue_set, self.detector, self.mode)


@dataclass
class RunOutcomes:
    """Per-run outcomes of one (variant, kind) for the ``experiment_runs`` table."""

    variant: str
    kind: str
    session_ids: list[str]
    seed: np.ndarray
    positions: np.ndarray
    inserted: np.ndarray
    notes: list[str]
    detected: dict[tuple[str, str, str], np.ndarray]  # (cue, det, mode) -> bool per run
    latency: dict[tuple[str, str, str], np.ndarray]
    #: (cue, det) -> per run, the largest statistic inside the detection window (normal
    #: sessions: the session maximum), so any threshold / false-alarm target and the
    #: detection-vs-false-alarm (ROC) curve can be evaluated from the stored rows (dashboard)
    window_max: dict[tuple[str, str], np.ndarray] = field(default_factory=dict)


@dataclass
class ExperimentResult:
    run_id: str
    created: datetime
    config: ExperimentConfig
    split: dict[str, Any]
    thresholds: dict[tuple[str, str, str, str], Threshold]  # (variant, cue, det, mode)
    cells: list[CellResult]
    notes: dict[str, dict[str, int]]  # kind -> note/skip counts
    timings: dict[str, float]
    runs: list[RunOutcomes] = field(default_factory=list)

    def cell(
        self, kind: str, cue: str, det: str, mode: str = "fa_target", variant: str = "standard"
    ) -> CellResult | None:
        for c in self.cells:
            if c.key() == (variant, kind, cue, det, mode):
                return c
        return None

    def to_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "created": self.created.isoformat(),
            "config": self.config.to_dict(),
            "split": self.split,
            "thresholds": [
                {
                    "variant": v,
                    "cue_set": c,
                    "detector": d,
                    "mode": m,
                    "threshold": _finite(t.value),
                    "fa_reached": t.fa_reached,
                }
                for (v, c, d, m), t in self.thresholds.items()
            ],
            "cells": [{k: _finite(v) for k, v in asdict(c).items()} for c in self.cells],
            "notes": self.notes,
            "timings_s": self.timings,
        }


def _finite(v: Any) -> Any:
    if isinstance(v, float) and not np.isfinite(v):
        return None
    return v


# ------------------------------------------------------------------------------ the protocol


def run_experiment(
    calls: pa.Table,
    config: ExperimentConfig | None = None,
    *,
    progress: Callable[[int], Any] | None = None,
    run_id: str | None = None,
) -> ExperimentResult:
    """Run the whole protocol on a call table (e.g. everything in a store)."""
    config = config or ExperimentConfig()
    timings: dict[str, float] = {}
    clock = time.perf_counter()

    def lap(name: str) -> None:
        nonlocal clock
        now = time.perf_counter()
        timings[name] = timings.get(name, 0.0) + now - clock
        clock = now

    sessions = normal_sessions(calls)
    split = split_by_time(sessions, config)
    context = InjectionContext.from_sessions(split.train, calls)
    lap("load_split")

    all_runs = list(build_runs(split.test, context, config, progress=progress).values())
    lap("inject")

    normal = list(split.test)
    variants = VARIANTS if config.ablation else VARIANTS[:1]
    thresholds: dict[tuple[str, str, str, str], Threshold] = {}
    cells: list[CellResult] = []
    outcomes: list[RunOutcomes] = []
    weights = M.bootstrap_weights(len(split.test), config.bootstrap, config.bootstrap_seed)
    lengths = np.array([len(s) for s in normal], dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    for variant in variants:
        ablate = variant == "no_response_ids"
        train = drop_response_ids(split.train) if ablate else split.train
        calib = drop_response_ids(split.calibration) if ablate else split.calibration
        model = fit_model(train, calib, config)
        op = operating_thresholds(model)
        lap("fit")
        groups = [normal, *(r.sessions for r in all_runs)]
        if ablate:
            groups = [drop_response_ids(g) for g in groups]
        normal_stats, *kind_stats = score_groups(model, groups)
        lap("score")
        normal_max: dict[str, np.ndarray] = {}
        for cue in CUE_SETS:
            for det in DETECTORS:
                col = f"{cue}_{det}"
                normal_max[col] = M.session_max(normal_stats[col], starts)
                choice = M.threshold_for_false_alarm(normal_max[col], config.target_fa)
                thresholds[(variant, cue, det, "fa_target")] = Threshold(
                    choice.threshold, choice.reached
                )
                thresholds[(variant, cue, det, "operating_point")] = Threshold(
                    op[col], M.false_alarm_rate(normal_max[col], op[col])
                )
        outcomes.append(_normal_outcomes(variant, split.test, normal_max, thresholds, config))
        for runs, stats in zip(all_runs, kind_stats, strict=True):
            if runs.sessions:
                new_cells, run_out = _evaluate_kind(
                    variant, runs, stats, thresholds, weights, len(split.test), config
                )
                cells.extend(new_cells)
                outcomes.append(run_out)
            if progress:
                progress(1)
        lap("metrics")

    notes = {
        r.kind: {**r.note_counts(), **{f"skipped: {k}": v for k, v in r.skipped.items()}}
        for r in all_runs
    }
    return ExperimentResult(
        run_id=run_id or uuid.uuid4().hex[:12],
        created=datetime.now(UTC),
        config=config,
        split=split.summary(),
        thresholds=thresholds,
        cells=cells,
        notes=notes,
        timings=timings,
        runs=outcomes,
    )


def progress_steps(config: ExperimentConfig) -> int:
    """Steps reported through ``progress``: one per seed injected, one per kind scored."""
    variants = 2 if config.ablation else 1
    return len(config.seeds) + len(config.kinds) * variants


def _normal_outcomes(
    variant: str,
    test: Sequence[SessionCalls],
    normal_max: Mapping[str, np.ndarray],
    thresholds: Mapping[tuple[str, str, str, str], Threshold],
    config: ExperimentConfig,
) -> RunOutcomes:
    n = len(test)
    detected: dict[tuple[str, str, str], np.ndarray] = {}
    latency: dict[tuple[str, str, str], np.ndarray] = {}
    for cue in CUE_SETS:
        for det in DETECTORS:
            for mode in MODES:
                thr = thresholds[(variant, cue, det, mode)].value
                detected[(cue, det, mode)] = normal_max[f"{cue}_{det}"] > thr
                latency[(cue, det, mode)] = np.zeros(n, dtype=np.int64)
    return RunOutcomes(
        variant=variant,
        kind=NORMAL,
        session_ids=[_stream_name(s) for s in test],
        seed=np.full(n, -1, dtype=np.int64),
        positions=np.full(n, -1, dtype=np.int64),
        inserted=np.zeros(n, dtype=np.int64),
        notes=[""] * n,
        detected=detected,
        latency=latency,
        window_max={(c, d): normal_max[f"{c}_{d}"] for c in CUE_SETS for d in DETECTORS},
    )


def _stream_name(s: SessionCalls) -> str:
    agent = s["agent_id"][0]
    return s.session_id if agent is None else f"{s.session_id}/{agent}"


def _evaluate_kind(
    variant: str,
    runs: KindRuns,
    stats: Mapping[str, np.ndarray],
    thresholds: Mapping[tuple[str, str, str, str], Threshold],
    weights: np.ndarray,
    n_sessions: int,
    config: ExperimentConfig,
) -> tuple[list[CellResult], RunOutcomes]:
    layout = runs.layout
    positive = layout.injected_mask()
    keys: list[tuple[str, str, str]] = []
    hits_cols: list[np.ndarray] = []
    runs_cols: list[np.ndarray] = []
    pending: list[dict[str, Any]] = []
    detected_out: dict[tuple[str, str, str], np.ndarray] = {}
    latency_out: dict[tuple[str, str, str], np.ndarray] = {}
    per_session_runs = np.bincount(runs.session_index, minlength=n_sessions).astype(np.float64)
    aucs = {cue: M.auc(stats[f"{cue}_point"], positive) for cue in CUE_SETS}
    for cue in CUE_SETS:
        for det in DETECTORS:
            col = f"{cue}_{det}"
            for mode in MODES:
                thr = thresholds[(variant, cue, det, mode)]
                detected, latency = M.window_outcomes(stats[col], layout, thr.value)
                detected_out[(cue, det, mode)] = detected
                latency_out[(cue, det, mode)] = latency
                hits = np.bincount(
                    runs.session_index, weights=detected.astype(np.float64), minlength=n_sessions
                )
                keys.append((cue, det, mode))
                hits_cols.append(hits)
                runs_cols.append(per_session_runs)
                pending.append(
                    {
                        "threshold": thr.value,
                        "fa_reached": thr.fa_reached,
                        "runs": len(detected),
                        "detected": int(detected.sum()),
                        "rate": float(detected.mean()) if len(detected) else float("nan"),
                        "median_latency": M.median_or_nan(latency[detected]),
                        "auc": aucs[cue],
                    }
                )
    lo, hi = M.bootstrap_rate_cis(np.stack(hits_cols, 1), np.stack(runs_cols, 1), weights)
    cells = [
        CellResult(
            variant=variant,
            kind=runs.kind,
            cue_set=cue,
            detector=det,
            mode=mode,
            ci_low=float(lo[j]),
            ci_high=float(hi[j]),
            **pending[j],
        )
        for j, (cue, det, mode) in enumerate(keys)
    ]
    out = RunOutcomes(
        variant=variant,
        kind=runs.kind,
        session_ids=[_stream_name(s) for s in runs.sessions],
        seed=runs.seed,
        positions=runs.positions,
        inserted=runs.inserted,
        notes=runs.notes,
        detected=detected_out,
        latency=latency_out,
        window_max={
            (c, d): M.window_max(stats[f"{c}_{d}"], layout) for c in CUE_SETS for d in DETECTORS
        },
    )
    return cells, out


__all__ = [
    "MODES",
    "NOTE_MID_RESPONSE",
    "NOTE_READ_PAIR",
    "VARIANTS",
    "CellResult",
    "ExperimentConfig",
    "ExperimentError",
    "ExperimentResult",
    "KindRuns",
    "Split",
    "build_runs",
    "data_changed",
    "data_fingerprint",
    "drop_response_ids",
    "load_run",
    "run_experiment",
    "split_by_time",
]


# ------------------------------------------------------------------------------ labelled copies


def injected_calls(
    calls: pa.Table,
    config: ExperimentConfig,
    *,
    seed: int | None = None,
    kinds: Sequence[str] | None = None,
) -> pa.Table:
    """Full call records of one seed's injected sessions, ready for ``Store.append("calls")``.

    The same injections as the experiment's runs of that seed (nothing random depends on which
    columns a session carries). Session ids become ``<session>~<kind>~s<seed>`` and every span
    id is re-derived so the copies never collide with the originals; injected calls carry
    ``label = kind``, so :func:`normal_sessions` keeps them out of later experiments.
    """
    seed = config.seeds[0] if seed is None else seed
    sessions = [s for s in split_sessions(calls) if all(v is None for v in s["label"])]
    split = split_by_time(sessions, config)
    context = InjectionContext.from_sessions(split.train, calls)
    one_seed = dataclasses.replace(config, seeds=(seed,))
    runs = build_runs(split.test, context, one_seed, kinds)
    out: list[SessionCalls] = []
    for kind, kind_runs in runs.items():
        for s in kind_runs.sessions:
            sid = f"{s.session_id}~{kind}~s{seed}"
            spans = np.array(
                [
                    hashlib.blake2b(f"{sid}/{span}/{i}".encode(), digest_size=8).hexdigest()
                    for i, span in enumerate(s["span_id"])
                ],
                dtype=object,
            )
            out.append(s.replace(session_id=np.full(len(s), sid, dtype=object), span_id=spans))
    return to_table(out)


# ------------------------------------------------------------------------------ the store

EXPERIMENTS: Final = tables.EXPERIMENTS.name
EXPERIMENT_RUNS: Final = tables.EXPERIMENT_RUNS.name
EXPERIMENTS_SCHEMA: Final = SCHEMAS[EXPERIMENTS]
EXPERIMENT_RUNS_SCHEMA: Final = SCHEMAS[EXPERIMENT_RUNS]
_TS = EXPERIMENTS_SCHEMA.field("created").type


def experiment_rows(result: ExperimentResult) -> pa.Table:
    """The ``experiments`` rows of a result (config and seeds on every row)."""
    n = len(result.cells)
    config_json = result.config.to_json()
    split_json = json.dumps(result.split, sort_keys=True)
    seeds = ",".join(str(s) for s in result.config.seeds)
    cols: dict[str, list[Any]] = {name: [] for name in EXPERIMENTS_SCHEMA.names}
    for c in result.cells:
        cols["variant"].append(c.variant)
        cols["kind"].append(c.kind)
        cols["cue_set"].append(c.cue_set)
        cols["detector"].append(c.detector)
        cols["threshold_mode"].append(c.mode)
        for name in (
            "threshold",
            "fa_reached",
            "rate",
            "ci_low",
            "ci_high",
            "median_latency",
            "auc",
        ):
            cols[name].append(_finite(float(getattr(c, name))))
        cols["runs"].append(c.runs)
        cols["detected"].append(c.detected)
        cols["notes_json"].append(json.dumps(result.notes.get(c.kind, {}), sort_keys=True))
    cols["run_id"] = [result.run_id] * n
    cols["created"] = [result.created] * n
    cols["fa_target"] = [result.config.target_fa] * n
    cols["normal_sessions"] = [int(result.split["test"][0])] * n
    cols["split_json"] = [split_json] * n
    cols["config_json"] = [config_json] * n
    cols["seeds"] = [seeds] * n
    return pa.table(
        {k: pa.array(v, EXPERIMENTS_SCHEMA.field(k).type) for k, v in cols.items()},
        schema=EXPERIMENTS_SCHEMA,
    )


def run_rows(result: ExperimentResult) -> pa.Table:
    """The ``experiment_runs`` rows: per-session outcomes (built column-wise, it is large)."""
    parts: list[pa.Table] = []
    for out in result.runs:
        n = len(out.session_ids)
        if n == 0:
            continue
        sid = pa.array(out.session_ids, pa.string())
        notes = pa.array([x or None for x in out.notes], pa.string())
        for (cue, det, mode), det_flags in out.detected.items():
            lat = out.latency[(cue, det, mode)]
            parts.append(
                pa.table(
                    {
                        "run_id": pa.array([result.run_id] * n, pa.string()),
                        "created": pa.array([result.created] * n, _TS),
                        "variant": pa.array([out.variant] * n, pa.string()),
                        "kind": pa.array([out.kind] * n, pa.string()),
                        "seed": pa.array(out.seed, pa.int64()),
                        "session_id": sid,
                        "position": pa.array(out.positions, pa.int64()),
                        "inserted": pa.array(out.inserted, pa.int64()),
                        "note": notes,
                        "cue_set": pa.array([cue] * n, pa.string()),
                        "detector": pa.array([det] * n, pa.string()),
                        "threshold_mode": pa.array([mode] * n, pa.string()),
                        "detected": pa.array(det_flags, pa.bool_()),
                        "latency": pa.array(lat, pa.int64(), mask=~det_flags | (lat <= 0)),
                        "window_max": pa.array(
                            out.window_max.get((cue, det), np.full(n, np.nan)), pa.float64()
                        ),
                    },
                    schema=EXPERIMENT_RUNS_SCHEMA,
                )
            )
    if not parts:
        return EXPERIMENT_RUNS_SCHEMA.empty_table()
    return pa.concat_tables(parts)


def save_result(store: Any, result: ExperimentResult, *, runs: bool = True) -> list[Any]:
    """Append a result to ``store`` (a :class:`~toolwatch.collector.store.parquet_store.Store`)."""
    files = store.append(
        EXPERIMENTS, experiment_rows(result), schema=EXPERIMENTS_SCHEMA, partition_by="created"
    )
    if runs:
        files += store.append(
            EXPERIMENT_RUNS,
            run_rows(result),
            schema=EXPERIMENT_RUNS_SCHEMA,
            partition_by="created",
        )
    return list(files)


def load_calls(store: Any) -> pa.Table:
    """Every call of a store (any source: collected, imported or simulated)."""
    from toolwatch.collector.store.parquet_store import CALLS, PARTITION_COLUMN

    con = store.connect()
    try:
        table = con.sql(f"SELECT * EXCLUDE ({PARTITION_COLUMN}) FROM {CALLS}").to_arrow_table()
    finally:
        con.close()
    if table.num_rows == 0:
        raise ExperimentError(
            f"the store {store.root} holds no calls: collect, import or simulate some first "
            "(e.g. `toolwatch simulate`)"
        )
    return table


def load_config(store: Any, run_id: str) -> ExperimentConfig:
    """The exact configuration of a saved run (to re-run it)."""
    return load_run(store, run_id)[0]


def load_run(store: Any, run_id: str) -> tuple[ExperimentConfig, dict[str, Any]]:
    """The configuration and the split summary (with its data fingerprint) of a saved run."""
    sql = f"SELECT config_json, split_json FROM {EXPERIMENTS} WHERE run_id = ? LIMIT 1"
    if EXPERIMENTS not in store.tables():
        raise ExperimentError(f"the store {store.root} holds no saved experiments")
    table = store.query(sql, [run_id])
    if table.num_rows == 0:
        raise ExperimentError(f"no saved experiment with run id {run_id!r} in {store.root}")
    row = table.to_pylist()[0]
    return ExperimentConfig.from_dict(json.loads(row["config_json"])), json.loads(row["split_json"])


def data_changed(saved_split: Mapping[str, Any], result: ExperimentResult) -> str | None:
    """Why a re-run's data differ from the saved run's (``None`` when they are the same)."""
    then, now = saved_split.get("data"), result.split.get("data")
    if then is None or now is None or then == now:
        return None
    return (
        f"{then['streams']:,} streams / {then['calls']:,} calls then, "
        f"{now['streams']:,} / {now['calls']:,} now"
        + (
            ""
            if (then["streams"], then["calls"]) != (now["streams"], now["calls"])
            else ", same counts, other calls"
        )
    )
