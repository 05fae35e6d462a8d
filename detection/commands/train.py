"""``toolwatch train``: fit the normal model on the training streams, calibrate, save the artifact.

    toolwatch train [--split-shares 0.44,0.07 | --split-dates 2026-08-24,2026-08-31]
        [--min-calls 30] [--store PATH] [--out model.json] [--adaptive]

The split is the one every command shares (:mod:`toolwatch.detection.calls.split`): streams —
``(session_id, agent_id)`` pairs — placed by their first call; by default the first 21/42 of
the store's days train and the next 7/42 calibrate, as in the study. ``toolwatch experiment``
and ``toolwatch replay`` with the same options use the very same streams. Streams flagged as
client warm-up agents are kept out (``--include-client-artefacts`` keeps them). The artifact
(JSON) records the config, the split with its counts, the parameters and the thresholds; by
default it is written where scoring looks for it, ``STORE/models/model.json``. ``--adaptive``
adds the adaptive normal model the live scorer keeps up to date
(:mod:`toolwatch.detection.model.adaptive`).
"""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from toolwatch.collector.store.location import add_store_argument
from toolwatch.detection.calls.split_options import SplitError, add_split_arguments, spec_from_args
from toolwatch.detection.cues.names import CUE_SETS
from toolwatch.detection.detectors.names import DETECTORS
from toolwatch.detection.model.adaptive_config import (
    AdaptiveConfig,
    adaptive_options_given,
    add_adaptive_arguments,
)
from toolwatch.detection.model.location import MODEL_IN_STORE
from toolwatch.detection.model.overrides import add_model_config_argument, model_overrides
from toolwatch.usage import UsageError, positive_share
from toolwatch.words import counted, noun_for

if TYPE_CHECKING:  # imported when the command runs: `train --help` needs no numpy, Arrow, DuckDB
    from toolwatch.detection.calls.split import StoreSplit
    from toolwatch.detection.model.normal_model import NormalModel

HELP = "fit the normal model and thresholds"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_split_arguments(parser)
    add_store_argument(parser)
    parser.add_argument(
        "--out", help=f"artifact path (default: STORE/{MODEL_IN_STORE}, where scoring looks)"
    )
    parser.add_argument(
        "--no-session-mix",
        action="store_true",
        help="order cue without the session's own bigram (the study's ablation)",
    )
    add_model_config_argument(parser)
    parser.add_argument(
        "--adaptive",
        action="store_true",
        help="add the adaptive normal model the live scorer folds normal traffic into",
    )
    parser.add_argument(
        "--target-fa",
        type=positive_share,
        help="with --adaptive: the share of streams the live threshold lets alarm (0.05)",
    )
    add_adaptive_arguments(parser)


def run(args: argparse.Namespace) -> int:
    # a ModelError, SplitError or StoreError reaches cli.main: one line with its exit code
    return _run(args)


def _run(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from toolwatch.collector.store.parquet_store import Store
    from toolwatch.detection.calls.split import split_store
    from toolwatch.detection.model.adaptive import attach_adaptive
    from toolwatch.detection.model.config import ModelConfig
    from toolwatch.detection.model.normal_model import NormalModel

    overrides = model_overrides(args.model_config)  # a bad option fails before any work
    if args.no_session_mix:
        overrides["order_session_mix"] = False
    config = ModelConfig.from_dict(overrides)
    spec = spec_from_args(args)  # like the model options, checked before the bar starts
    adaptive = AdaptiveConfig.from_args(args) if args.adaptive else None
    given = adaptive_options_given(args)
    if adaptive is None and given:
        raise UsageError(f"{', '.join(given)} only with --adaptive (the model they configure)")
    store = Store(args.store)
    # an empty or missing store fails before the bar, too; an empty test split does not
    # (training never reads it: said after the summary)
    cut = split_store(store, spec, need_test=False)
    nothing = empty_calibration(cut)
    if nothing:  # said before the fit, not after it
        raise SplitError(nothing)
    with tqdm(
        total=4, desc="train", unit="step", file=sys.stderr, leave=False, disable=None
    ) as bar:
        train = cut.calls("train")
        bar.update()
        model = NormalModel.fit(train, config, window=describe(cut, "train"))
        bar.update()
        calib = cut.calls("calibration")
        model.calibrate(calib, window=describe(cut, "calibration"))
        if adaptive is not None:
            attach_adaptive(model, train, calib, adaptive)
        bar.update()
        path = model.save(args.out or store.root / MODEL_IN_STORE)
        bar.update()
    print(summary(model, str(path), cut))
    untested = empty_test_split(cut)
    if untested:
        print(f"toolwatch train: {untested}", file=sys.stderr)
    thin = thin_calibration(model)
    if thin:
        print(f"toolwatch train: warning: {thin}", file=sys.stderr)
    return 0


def empty_test_split(cut: StoreSplit) -> str:
    """One line when the split leaves nothing to test (training does not need it), or ``""``."""
    if len(cut.split.test):
        return ""
    streams, _ = cut.count("test_all")
    held = (
        f"none of its {counted(streams, 'stream')} has >= {counted(cut.spec.min_calls, 'call')}, "
        "client artefacts aside"
        if streams
        else "no stream starts after the calibration split"
    )
    return (
        f"the test split is empty ({held}): the model is trained, but `toolwatch experiment` "
        "and `replay` with these options have nothing to test"
    )


def empty_calibration(cut: StoreSplit) -> str:
    """Why the split leaves nothing to calibrate on, with the split it made and the days the
    streams start on (dates beyond the data put every stream in training), or ``""``."""
    streams, calls = cut.count("calibration")
    if streams and calls:
        return ""
    test = counted(cut.count("test_all")[0], "test stream")
    given = describe(cut, "calibration")["given"]
    return (
        f"the calibration split holds no calls: {cut.count('train')[0]} train, 0 calibration, "
        f"{test} by {given}; the streams start {cut.split.description['streams_span']}: "
        "give calibration a share (--split-shares) "
        "or days (--split-dates) within them"
    )


def thin_calibration(model: NormalModel) -> str:
    """Why the model's calibration split is too small for the operating point, or ``""``."""
    from toolwatch.detection.model import thresholds

    d = model.data.get("calibration", {})
    streams, calls = int(d.get("streams", 0)), int(d.get("calls", 0))
    return thresholds.thin_calibration(streams, calls, model.config.operating_quantile)


def describe(cut: StoreSplit, group: str) -> dict[str, Any]:
    """What a group of the split is, for the artifact: the rule, its first-call range (each
    stream where the split placed it: by its arrival when its client clock is ahead), counts."""
    from toolwatch.detection.calls.split import rule_given

    idx = getattr(cut.split, group)
    placed = cut.placed_us()
    starts = sorted(_at(int(placed[i])) for i in idx.tolist())
    return {
        "from": starts[0].isoformat() if starts else None,
        "to": starts[-1].isoformat() if starts else None,
        "given": rule_given(cut.split.description),
        "streams": len(idx),
    }


def summary(model: NormalModel, path: str, cut: StoreSplit | None = None) -> str:
    """What was learnt, from which streams, and the operating point."""
    from toolwatch.detection.calls.split import placed_by_arrival_line
    from toolwatch.detection.model.adaptive import AdaptiveModel

    lines = [f"model {model.model_id} -> {path}"]
    for name in ("train", "calibration"):
        d = model.data.get(name, {})
        window = d.get("window", {})
        span = f"first calls {_moment(window.get('from'))} .. {_moment(window.get('to'))}"
        lines.append(
            f"  {name:<12} {d.get('streams', 0):>5,} {noun_for(d.get('streams', 0), 'stream'):<7} "
            f"({counted(d.get('sessions', 0), 'session')}) "
            f"{d.get('calls', 0):>7,} {noun_for(d.get('calls', 0), 'call'):<5} "
            f"{d.get('tools', 0):>3} {noun_for(d.get('tools', 0), 'tool'):<5}  {span}"
        )
    if cut is not None:
        streams, calls = cut.count("test")
        lines.append(
            f"  test split   {streams:>5,} {noun_for(streams, 'stream'):<7} with >= "
            f"{counted(cut.spec.min_calls, 'call')} ({counted(calls, 'call')}): what "
            "`toolwatch experiment` with these options tests on; "
            f"split {model.data['train']['window'].get('given', '')}"
        )
        for quirk, groups in cut.split.artefacts.items():
            kept = ", ".join(f"{len(v)} in {k}" for k, v in groups.items() if len(v))
            lines.append(f"  kept apart   {quirk} streams (client artefacts): {kept}")
        placed = placed_by_arrival_line(cut.split.description)
        if placed:
            lines.append(f"  clock ahead  {placed}")
    share = 1 - model.config.operating_quantile
    lines.append(f"  operating-point thresholds (top {share:.2%} of calibration calls):")
    lines.append("    " + f"{'cue set':<9}" + "".join(f"{d:>10}" for d in DETECTORS))
    for s in CUE_SETS:
        lines.append(
            "    " + f"{s:<9}" + "".join(f"{model.threshold(s, d):>10.3f}" for d in DETECTORS)
        )
    if model.novelty is not None and model.novelty.thresholds:
        lines.append(
            "    "
            + f"{'novelty':<9}"
            + "".join(f"{model.novelty.thresholds[d]:>10.3f}" for d in DETECTORS)
            + f"   (first uses by {model.novelty.cue.key}; not in all"
            + (f"; alerts on {model.config.novelty_alert})" if model.config.novelty_alert else ")")
        )
    if model.provenance is not None:
        rule = model.provenance.rule
        shown = ", ".join(
            f"{c} {lon}/{tot}" for c, (lon, tot) in model.provenance.thresholds.items()
        )
        lines.append(f"  provenance payload thresholds, longest/total bytes (rule {rule}): {shown}")
        unmeasured = model.data["train"].get("provenance_unmeasured", 0)
        if unmeasured:
            lines.append(
                f"    {counted(unmeasured, 'training call')} without provenance measured "
                "(never alarm)"
            )
    if model.adaptive is not None:
        lines.append("  " + AdaptiveModel.from_model(model).describe())
    return "\n".join(lines)


def _at(us: int) -> datetime:
    """A time in µs as a UTC datetime, to the microsecond."""
    return datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=us)


def _moment(iso: str | None) -> str:
    """A time for display: the date at midnight UTC, else date and time (UTC)."""
    if not iso:
        return "open"
    moment = datetime.fromisoformat(iso).astimezone(UTC)
    if moment.time() == datetime.min.time():
        return moment.date().isoformat()
    return moment.strftime("%Y-%m-%d %H:%M:%S UTC")
