"""``toolwatch train``: fit the normal model on a training window, calibrate, save the artifact.

    toolwatch train --train 2026-08-04..2026-08-24 --calibrate 2026-08-25..2026-08-31 \\
        [--store PATH] [--out model.json]

Windows select sessions by their first call (:mod:`toolwatch.detection.calls.windows`); without
``--train``/``--calibrate`` the first 21/42 of the store's days train and the next 7/42
calibrate, as in the study (shares of sessions when the days leave a window empty). The
artifact (JSON) records the config, both windows with their counts, the parameters and the
thresholds; by default it is written where scoring looks for it, ``STORE/models/model.json``.
"""

from __future__ import annotations

import argparse
import math
import sys
from datetime import UTC, datetime

from tqdm import tqdm

from toolwatch.collector.store.parquet_store import Store, StoreError, add_store_argument
from toolwatch.detection.calls.windows import (
    WindowError,
    default_windows,
    load_window,
    parse_window,
)
from toolwatch.detection.cues.base import CUE_SETS
from toolwatch.detection.detectors.base import DETECTORS
from toolwatch.detection.model.normal_model import (
    MODEL_IN_STORE,
    ModelConfig,
    ModelError,
    NormalModel,
)

HELP = "fit the normal model and thresholds"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--train",
        metavar="FROM..TO",
        help="training window (ISO dates; default: the first 21/42 of the store's days)",
    )
    parser.add_argument(
        "--calibrate",
        metavar="FROM..TO",
        help="calibration window (ISO dates; default: the next 7/42 of the days)",
    )
    add_store_argument(parser)
    parser.add_argument(
        "--out", help=f"artifact path (default: STORE/{MODEL_IN_STORE}, where scoring looks)"
    )
    parser.add_argument(
        "--no-session-mix",
        action="store_true",
        help="order cue without the session's own bigram (the study's ablation)",
    )


def run(args: argparse.Namespace) -> int:
    try:
        return _run(args)
    except (ModelError, WindowError, StoreError) as exc:
        print(f"toolwatch train: {exc}", file=sys.stderr)
        return 1


def _run(args: argparse.Namespace) -> int:
    store = Store(args.store)
    if bool(args.train) != bool(args.calibrate):
        raise WindowError("give both --train and --calibrate, or neither (default shares)")
    with tqdm(total=5, desc="train", unit="step", file=sys.stderr, leave=False) as bar:
        if args.train:
            train_w, cal_w = parse_window(args.train), parse_window(args.calibrate)
        else:
            train_w, cal_w = default_windows(store)
        bar.update()
        train = load_window(store, train_w)
        if train.num_rows == 0:
            raise WindowError(
                f"the training window {train_w.text} has no normal calls in {store.root}"
            )
        bar.update()
        config = ModelConfig(order_session_mix=not args.no_session_mix)
        model = NormalModel.fit(train, config, window=train_w.describe())
        bar.update()
        calib = load_window(store, cal_w)
        if calib.num_rows == 0:
            raise WindowError(
                f"the calibration window {cal_w.text} has no normal calls in {store.root}"
            )
        model.calibrate(calib, window=cal_w.describe())
        bar.update()
        path = model.save(args.out or store.root / MODEL_IN_STORE)
        bar.update()
    print(summary(model, str(path)))
    thin = thin_calibration(model)
    if thin:
        print(f"toolwatch train: warning: {thin}", file=sys.stderr)
    return 0


#: Fewer calibration sessions than this and the operating point is one session's behaviour.
MIN_CALIBRATION_SESSIONS = 10


def thin_calibration(model: NormalModel) -> str:
    """Why the calibration window is too small for the operating point, or ``""``."""
    d = model.data.get("calibration", {})
    sessions, calls = int(d.get("sessions", 0)), int(d.get("calls", 0))
    share = 1 - model.config.operating_quantile
    needed = math.ceil(1 / share) if share > 0 else 0
    if sessions >= MIN_CALIBRATION_SESSIONS and calls >= needed:
        return ""
    return (
        f"the calibration window holds {sessions:,} session(s) and {calls:,} call(s): a top "
        f"{share:.2%} threshold needs at least {needed:,} calls and "
        f"{MIN_CALIBRATION_SESSIONS} sessions to mean anything; widen --calibrate"
    )


def summary(model: NormalModel, path: str) -> str:
    """What was learnt, from which data, and the operating point."""
    lines = [f"model {model.model_id} -> {path}"]
    for name in ("train", "calibration"):
        d = model.data.get(name, {})
        window = d.get("window", {})
        span = f"[{_moment(window.get('from'))} .. {_moment(window.get('to'))})"
        given = window.get("given")
        lines.append(
            f"  {name:<12} {d.get('sessions', 0):>5,} sessions ({d.get('streams', 0):,} streams) "
            f"{d.get('calls', 0):>7,} calls {d.get('tools', 0):>3} tools  {span}"
            + (f" ({given})" if given and ".." not in given else "")  # a default window
        )
    share = 1 - model.config.operating_quantile
    lines.append(f"  operating-point thresholds (top {share:.2%} of calibration calls):")
    lines.append("    " + f"{'cue set':<9}" + "".join(f"{d:>10}" for d in DETECTORS))
    for s in CUE_SETS:
        lines.append(
            "    " + f"{s:<9}" + "".join(f"{model.threshold(s, d):>10.3f}" for d in DETECTORS)
        )
    return "\n".join(lines)


def _moment(iso: str | None) -> str:
    """A window bound for display: the date at midnight UTC, else date and time (UTC)."""
    if not iso:
        return "open"
    moment = datetime.fromisoformat(iso).astimezone(UTC)
    if moment.time() == datetime.min.time():
        return moment.date().isoformat()
    return moment.strftime("%Y-%m-%d %H:%M:%S UTC")
