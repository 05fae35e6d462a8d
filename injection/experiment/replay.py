"""Replay: a stored corpus driven through the live scorer in time order, as if it arrived now.

This is how a user checks, before turning alerts on, the false-alarm rate they will get and how
soon drift would wear it down. The split is the one every command shares
(:mod:`toolwatch.detection.calls.split`); the model is fitted on train and calibrated as
``toolwatch train`` does; then **every** test-split stream (any length) is fed call by call, in
global time order, through :class:`~toolwatch.detection.alerting.live.LiveScorer` — the code the
collector runs — in batches of ``batch_s`` of event time, under the collector's future-clock
guard: a call stamped more than 5 min after its arrival mark (``received_time``, where the
collector stored it) arrives at its mark, and one without a mark stamped more than 5 min after
a later call of its own stream is stamped ahead of the corpus and arrives with that call; both
are distrusted as the collector distrusts one (counted: ``split["stamped_ahead_of_arrival"]``
and ``split["stamped_ahead"]``; :mod:`.replay_clock`):

* **adaptive**: the model trained with its adaptive part (``toolwatch train --adaptive``): the
  threshold held at ``target_fa`` of recent stream maxima, streams that did not alarm folded in
  after the quarantine (their calls read back from the corpus);
* **frozen**: the same model without it, alerting at its operating point (what the collector
  did before), printed beside.

**Injected copies.** Per seed and normal test stream (≥ ``min_calls`` calls) the experiment's
injector (:mod:`toolwatch.injection.experiment.runs`: same positions, same seeds) writes one
labelled copy per kind; the copies arrive with the corpus, are scored against the threshold of
the moment, and — being labelled — are never folded nor pooled. A copy is detected when a call
of its detection window (``max(#inserted, 10) + 10`` calls from the insertion point) is above
the threshold, as in the experiment.

**Per week** (of each stream's first call, Monday to Sunday, UTC; of its first arrival mark
when stamped more than 5 min after it, as the split places it): the normal long streams that
alarmed (k/n, with a 95 % Wilson interval), the threshold at the end of the week, and the
detection of the copies of that week's streams. Weeks of fewer than :data:`THIN_WEEK` streams
are marked thin: one alarm there is already 1/n.

:mod:`.replay_report` prints the result (and gives the dashboard's Replay page its cells);
:mod:`.replay_storage` saves it in the store's ``replays`` table.
"""

from __future__ import annotations

import dataclasses
import math
import time
import uuid
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Final

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from scipy.stats import binom

from toolwatch.collector.store.arrow_schema import CALLS_SCHEMA
from toolwatch.detection.alerting import CLOCK_AHEAD_S
from toolwatch.detection.alerting.live import LiveScorer
from toolwatch.detection.cues.base import Call
from toolwatch.detection.model.adaptive import attach_adaptive
from toolwatch.detection.model.adaptive_config import AdaptiveConfig
from toolwatch.detection.scoring.adaptive import Closed
from toolwatch.detection.scoring.online import Scores
from toolwatch.injection.experiment.config import THIN_TEST, ExperimentConfig
from toolwatch.injection.experiment.metrics import (
    detection_window,
    threshold_above_false_alarm,
    threshold_for_false_alarm,
)
from toolwatch.injection.experiment.replay_clock import copy_arrivals, stamped_ahead
from toolwatch.injection.experiment.runs import build_runs
from toolwatch.injection.experiment.scoring import fit_model
from toolwatch.injection.experiment.split import (
    normal_sessions,
    placed_at,
    split_by_time,
    stream_name,
)
from toolwatch.injection.spans.context import InjectionContext
from toolwatch.injection.spans.session_arrays import SessionCalls, to_table

#: Kinds injected into the replayed weeks by default: the two the detector must catch and the
#: control that must not alarm.
REPLAY_KINDS: Final[tuple[str, ...]] = ("burst", "runaway_retry", "control_same_response_burst")
#: Weeks with fewer normal long streams than this are marked thin.
THIN_WEEK: Final = 20
#: A week is above 2× the target beyond chance below this one-sided binomial p-value.
BEYOND_P: Final = 0.05
MODELS: Final[tuple[str, ...]] = ("adaptive", "frozen")
#: The label of a copy's calls that were not injected (a copy is an injected stream).
COPY_LABEL: Final = "copy"


@dataclass(frozen=True)
class ReplayConfig:
    """What determines a replay's numbers."""

    experiment: ExperimentConfig = field(default_factory=ExperimentConfig)
    adaptive: AdaptiveConfig = field(default_factory=AdaptiveConfig)
    statistic: str = "all_cusum"
    batch_s: float = 60.0
    replay_kinds: tuple[str, ...] = REPLAY_KINDS

    def to_dict(self) -> dict[str, Any]:
        """Every knob, as saved with the results (``replays.config_json``)."""
        return {
            "experiment": self.experiment.to_dict(),
            "adaptive": self.adaptive.to_dict(),
            "statistic": self.statistic,
            "batch_s": self.batch_s,
            "replay_kinds": list(self.replay_kinds),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ReplayConfig:
        """The config of :meth:`to_dict` (``toolwatch replay --rerun``)."""
        return cls(
            experiment=ExperimentConfig.from_dict(data["experiment"]),
            adaptive=AdaptiveConfig.from_dict(data["adaptive"]),
            statistic=str(data["statistic"]),
            batch_s=float(data["batch_s"]),
            replay_kinds=tuple(data["replay_kinds"]),
        )


@dataclass
class ModelReplay:
    """One model's replay: per normal stream whether it alarmed; per copy whether detected."""

    alarmed: dict[str, bool]  # normal stream name -> alarmed at least once
    detected: dict[tuple[str, int, str], bool]  # (kind, seed, stream name) -> detected
    #: the statistic's maximum per normal long stream, and per copy inside its window: the
    #: experiment's own threshold rule can be applied to the replayed scores afterwards
    normal_max: dict[str, float]
    window_max: dict[tuple[str, int, str], float]
    thresholds: list[tuple[int, float]]  # (event time µs, threshold) after each batch
    counts: dict[str, int]
    seconds: float
    calls: int
    #: flagged client artefacts of the test split with ≥ ``min_calls`` calls (fed like every
    #: stream, never folded, pooled or counted as normal) -> alarmed at least once
    artefacts_alarmed: dict[str, bool] = field(default_factory=dict)


@dataclass
class WeekRow:
    week: str
    normal: int  # normal long streams that started this week
    alarmed: dict[str, int]  # model -> k
    threshold: dict[str, float]  # model -> threshold at the week's end
    detection: dict[str, dict[str, tuple[int, int]]]  # model -> kind -> (detected, runs)


@dataclass
class ReplayResult:
    run_id: str
    created: datetime
    config: ReplayConfig
    split: dict[str, Any]
    weeks: list[WeekRow]
    totals: dict[str, dict[str, Any]]
    models: dict[str, ModelReplay]


def run_replay(
    calls: pa.Table,
    config: ReplayConfig,
    models: Sequence[str] = MODELS,
    *,
    run_id: str | None = None,
) -> ReplayResult:
    """Split, fit, inject, then replay the test split through the live scorer (both models)."""
    exp = config.experiment
    sessions = normal_sessions(calls)
    split = split_by_time(sessions, exp)
    exp = dataclasses.replace(exp, split_dates=split.spec.dates, split_shares=split.spec.shares)
    model = fit_model(split.train, split.calibration, exp)
    # one target for the whole replay: the experiment's (the scorer reads ``config.adaptive``)
    config = dataclasses.replace(
        config,
        experiment=exp,
        adaptive=dataclasses.replace(config.adaptive, target_fa=exp.target_fa),
    )
    train_t = to_table(split.train)
    calib_t = to_table(split.calibration if split.calibration else split.train)
    attach_adaptive(model, train_t, calib_t, config.adaptive)

    context = InjectionContext.from_sessions(split.train)
    runs = build_runs(split.test, context, exp, kinds=config.replay_kinds)
    shadows: list[SessionCalls] = []
    guard_us = int(CLOCK_AHEAD_S * 1e6)
    shadow_arrive: list[np.ndarray] = []  # when each copy's calls arrive (:mod:`.replay_clock`)
    shadow_meta: list[tuple[str, int, str, int, int]] = []  # kind, seed, name, position, window
    for kind, kind_runs in runs.items():
        windows = detection_window(kind_runs.inserted)
        for j, s in enumerate(kind_runs.sessions):
            seed = int(kind_runs.seed[j])
            sid = f"{s.session_id}~{kind}~s{seed}"
            original = split.test[int(kind_runs.session_index[j])]
            shadow_arrive.append(copy_arrivals(s, original, guard_us))
            # every call of a copy is labelled (the injected ones with their kind), so no part
            # of it is ever learnt or pooled, even one that closes before the injection
            label = np.where(s["label"] == None, COPY_LABEL, s["label"])  # noqa: E711
            shadows.append(s.replace(session_id=np.full(len(s), sid, dtype=object), label=label))
            name = stream_name(original)
            shadow_meta.append((kind, seed, name, int(kind_runs.positions[j]), int(windows[j])))

    test_streams = split.test_split
    normal_table = to_table(test_streams)
    # when each call reached the replay: its stamp, unless stamped ahead of its arrival mark
    # or (without one) of its own stream
    normal_arrive, ahead, ahead_of_arrival = stamped_ahead(test_streams, guard_us)
    replay = pa.concat_tables([normal_table, to_table(shadows)]) if shadows else normal_table
    arrive = np.concatenate([normal_arrive, *shadow_arrive])
    order = pc.sort_indices(
        pa.table({"arrival": arrive, "seq": replay.column("seq")}),
        sort_keys=[("arrival", "ascending"), ("seq", "ascending")],
    )
    replay, arrive = replay.take(order), arrive[order.to_numpy()]
    long_names = {stream_name(s) for s in split.test}
    artefact_of = {
        stream_name(s): quirk
        for quirk, groups in split.artefacts.items()
        for s in groups.get("test", [])
        if len(s) >= exp.min_calls
    }
    results = {}
    for name in models:
        results[name] = _drive(
            model,
            replay,
            normal_table,
            config,
            arrive_us=(arrive, normal_arrive),
            adaptive=name == "adaptive",
            long_names=long_names,
            shadow_meta=shadow_meta,
            shadows=shadows,
            artefact_names=set(artefact_of),
        )
    weeks, totals = _weekly(split.test, results, config, runs_kinds=tuple(runs))
    for name, res in results.items():
        totals[name]["artefacts"] = _artefact_alarms(split.artefacts, artefact_of, res)
    summary = split.summary()
    summary["replayed_streams"] = len(test_streams)
    summary["injected_copies"] = len(shadows)
    summary["stamped_ahead"] = ahead
    summary["stamped_ahead_of_arrival"] = ahead_of_arrival
    return ReplayResult(
        run_id=run_id or uuid.uuid4().hex[:12],
        created=datetime.now(UTC),
        config=config,
        split=summary,
        weeks=weeks,
        totals=totals,
        models=results,
    )


def _drive(
    model: Any,
    replay: pa.Table,
    normal_table: pa.Table,
    config: ReplayConfig,
    *,
    arrive_us: tuple[np.ndarray, np.ndarray],
    adaptive: bool,
    long_names: set[str],
    shadow_meta: Sequence[tuple[str, int, str, int, int]],
    shadows: Sequence[SessionCalls],
    artefact_names: Collection[str] = (),
) -> ModelReplay:
    """Feed ``replay`` through one LiveScorer in batches of event time; record alarms (of
    the normal long streams, and apart of the long client artefacts). ``arrive_us``: when each
    call of ``replay`` and of ``normal_table`` arrived (:mod:`.replay_clock`), the clock of
    the collector's future-clock guard."""
    index = _stream_rows(normal_table)
    starts_us = normal_table.column("start_time").cast(pa.int64()).to_numpy()

    def calls_of(streams: Sequence[Closed]) -> pa.Table:
        rows: list[int] = []
        for c in streams:
            for r in index.get(c.key, ()):
                if c.first_us <= starts_us[r] <= c.last_us:
                    rows.append(r)
        return (
            normal_table.take(pa.array(sorted(rows), pa.int64()))
            if rows
            else (CALLS_SCHEMA.empty_table())
        )

    live = LiveScorer(
        model,
        None,
        alert_on=[config.statistic],
        adaptive=config.adaptive if adaptive else False,
        calls_of=calls_of,
        record=False,
        clock_ahead_s=CLOCK_AHEAD_S,
    )
    shadow_of = {(str(s.session_id), s["agent_id"][0]): j for j, s in enumerate(shadows)}
    seen: dict[tuple[str, str | None], int] = {}
    alarmed: dict[str, bool] = {}
    artefacts = dict.fromkeys(artefact_names, False)
    detected: dict[tuple[str, int, str], bool] = {}
    normal_max: dict[str, float] = {}
    window_max: dict[tuple[str, int, str], float] = {}
    stat = config.statistic

    def observe(call: Call, _index: int, scores: Scores, mask: int) -> None:
        key = (call.session_id, call.agent_id)
        k = seen.get(key, 0)
        seen[key] = k + 1
        j = shadow_of.get(key)
        value = scores[stat]
        if j is None:
            name = (
                call.session_id if call.agent_id is None else f"{call.session_id}/{call.agent_id}"
            )
            if name in long_names:
                alarmed[name] = alarmed.get(name, False) or bool(mask & 1)
                normal_max[name] = max(normal_max.get(name, -math.inf), value)
            elif name in artefacts:
                artefacts[name] = artefacts[name] or bool(mask & 1)
            return
        kind, seed, name, position, window = shadow_meta[j]
        run = (kind, seed, name)
        if position <= k < position + window:
            detected[run] = detected.get(run, False) or bool(mask & 1)
            window_max[run] = max(window_max.get(run, -math.inf), value)
        else:
            detected.setdefault(run, False)
            window_max.setdefault(run, -math.inf)

    live.on_scored = observe
    t_us, normal_us = arrive_us
    batch = _batches(t_us, normal_us, int(config.batch_s * 1e6))
    cuts = np.flatnonzero(np.diff(batch)) + 1
    bounds = np.concatenate([[0], cuts, [len(t_us)]])
    thresholds: list[tuple[int, float]] = []
    clock = time.perf_counter()
    for a, b in zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True):
        live.process(replay.slice(a, b - a), clock_us=int(t_us[b - 1]))
        thresholds.append((int(t_us[b - 1]), live.scorer.thresholds[0]))
    live.scorer.advance(int(t_us[-1]) + 10 * 86_400_000_000)  # close and fold what is left
    seconds = time.perf_counter() - clock
    for name in long_names:
        alarmed.setdefault(name, False)
    return ModelReplay(
        alarmed,
        detected,
        normal_max,
        window_max,
        thresholds,
        dict(live.scorer.counts),
        seconds,
        live.calls_scored,
        artefacts,
    )


def _artefact_alarms(
    artefacts: Mapping[str, Mapping[str, Sequence[SessionCalls]]],
    artefact_of: Mapping[str, str],
    res: ModelReplay,
) -> dict[str, dict[str, int]]:
    """Per quirk: the test split's flagged streams and calls (replayed, never counted as
    normal), how many have ≥ ``min_calls`` calls and how many of those alarmed."""
    out: dict[str, dict[str, int]] = {}
    for quirk, groups in sorted(artefacts.items()):
        test = groups.get("test", [])
        if not test:
            continue
        long = [n for n, q in artefact_of.items() if q == quirk]
        out[quirk] = {
            "streams": len(test),
            "calls": int(sum(len(s) for s in test)),
            "long": len(long),
            "alarmed": sum(res.artefacts_alarmed.get(n, False) for n in long),
        }
    return out


def _batches(t_us: np.ndarray, normal_us: np.ndarray, batch_us: int) -> np.ndarray:
    """The batch of each replayed call (by arrival, ``t_us``): windows of ``batch_us`` of event
    time, cut only where the corpus itself has calls (``normal_us``; a copy's call joins the
    next window that does), so the live scorer advances at the same moments whichever copies
    ride along, and the normal streams' figures do not depend on the injected kinds."""
    normal_windows = np.unique(normal_us // batch_us)
    windows = t_us // batch_us
    j = np.searchsorted(normal_windows, windows, side="left")  # the next window with corpus calls
    last = normal_windows.shape[0]
    return np.where(j < last, j, last)  # copies after the last corpus call: one final batch


def _stream_rows(table: pa.Table) -> dict[tuple[str, str | None], list[int]]:
    out: dict[tuple[str, str | None], list[int]] = {}
    for r, key in enumerate(
        zip(
            table.column("session_id").to_pylist(),
            table.column("agent_id").to_pylist(),
            strict=True,
        )
    ):
        out.setdefault(key, []).append(r)
    return out


def week_of(us: int) -> str:
    """The Monday (UTC) of the week of a time in µs."""
    day = datetime.fromtimestamp(us / 1e6, UTC).date()
    return (day - timedelta(days=day.weekday())).isoformat()


def _weekly(
    test: Sequence[SessionCalls],
    results: dict[str, ModelReplay],
    config: ReplayConfig,
    runs_kinds: tuple[str, ...],
) -> tuple[list[WeekRow], dict[str, dict[str, Any]]]:
    # a stream's week is where the split placed it (its arrival, when stamped ahead of it)
    week = {stream_name(s): week_of(int(t)) for s, t in zip(test, placed_at(test), strict=True)}
    weeks = sorted(set(week.values()))
    rows = []
    for w in weeks:
        names = [n for n, ww in week.items() if ww == w]
        end_us = int(
            (datetime.fromisoformat(w).replace(tzinfo=UTC) + timedelta(days=7)).timestamp() * 1e6
        )
        row = WeekRow(w, len(names), {}, {}, {})
        for model, res in results.items():
            row.alarmed[model] = sum(res.alarmed[n] for n in names)
            before = [thr for t, thr in res.thresholds if t < end_us]
            row.threshold[model] = before[-1] if before else math.nan
            row.detection[model] = {}
            for kind in runs_kinds:
                hits = [v for (k, _, n), v in res.detected.items() if k == kind and week[n] == w]
                row.detection[model][kind] = (sum(hits), len(hits))
        rows.append(row)
    totals: dict[str, dict[str, Any]] = {}
    target = config.experiment.target_fa
    for model, res in results.items():
        n = len(res.alarmed)
        k = sum(res.alarmed.values())
        later = rows[1:]
        over = [r.week for r in later if r.normal and r.alarmed[model] / r.normal > 2 * target]
        over_full = [r for r in later if r.normal >= THIN_WEEK and r.week in over]
        # a thin week's share moves in steps of 1/n: which of them are above 2× the target
        # beyond chance (one-sided exact binomial test, each stream alarming at 2× the target)
        beyond = [
            {"week": r.week, "alarmed": r.alarmed[model], "streams": r.normal, "p": p}
            for r in later
            if r.week in over
            and (p := chance_of_as_many(r.alarmed[model], r.normal, 2 * target)) < BEYOND_P
        ]
        det = {}
        for kind in runs_kinds:
            hits = [v for (kk, _, _), v in res.detected.items() if kk == kind]
            det[kind] = (sum(hits), len(hits))
        # the experiment's rule on the replayed scores: one threshold, at which at most the
        # target of the normal long streams ever alarm (an oracle: it looks at the whole replay)
        maxima = np.array(list(res.normal_max.values()))
        choice = threshold_for_false_alarm(maxima, target)
        oracle = _oracle_detection(res, runs_kinds, choice.threshold)
        # with few normal streams the level moves in big steps: the next one up too, as the
        # experiment's headline shows both (THIN_TEST)
        above = None
        if 0 < n < THIN_TEST:
            try:
                up = threshold_above_false_alarm(maxima, target)
            except ValueError:  # every stream alarms already at the level not above the target
                up = None
            if up is not None:
                above = {
                    "threshold": up.threshold,
                    "alarmed": round(up.reached * n),
                    "detection": _oracle_detection(res, runs_kinds, up.threshold),
                }
        totals[model] = {
            "alarmed": k,
            "streams": n,
            "weeks_over_2x_target": over,
            "full_weeks_over_2x_target": [r.week for r in over_full],
            "weeks_over_2x_target_beyond_chance": beyond,
            "detection": det,
            "oracle": {
                "threshold": choice.threshold,
                "alarmed": round(choice.reached * n),
                "detection": oracle,
                "next_level": above,
            },
            "counts": res.counts,
            "seconds": res.seconds,
            "calls": res.calls,
        }
    return rows, totals


def _oracle_detection(
    res: ModelReplay, kinds: Sequence[str], threshold: float
) -> dict[str, tuple[int, int]]:
    """Per kind, (copies whose detection window rose above ``threshold``, copies)."""
    out = {}
    for kind in kinds:
        hits = [v > threshold for (kk, _, _), v in res.window_max.items() if kk == kind]
        out[kind] = (sum(hits), len(hits))
    return out


def chance_of_as_many(alarmed: int, streams: int, share: float) -> float:
    """P(at least ``alarmed`` of ``streams`` alarm) when each alarms with probability
    ``share``: the one-sided exact binomial p-value of a week's alarms."""
    return float(binom.sf(alarmed - 1, streams, share))
