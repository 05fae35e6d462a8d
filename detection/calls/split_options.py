"""The split's options and its spec, apart from the split (numpy, Arrow, the store): ``toolwatch
train|experiment|scan|replay --help`` builds ``--split-dates``, ``--split-shares``, ``--min-calls``
and ``--include-client-artefacts`` from here without loading them; what the options mean is
:mod:`toolwatch.detection.calls.split`'s docstring. Standard library only."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from datetime import date
from typing import Any

from toolwatch import study
from toolwatch.usage import EXIT_USAGE, UserError, positive_int


class SplitError(UserError, ValueError):
    """A split option is malformed or the split leaves nothing to work with (says which)."""


class SplitOptionError(SplitError):
    """A split option that cannot be meant (bad usage, exit 2): said before any work."""

    code = EXIT_USAGE


def parse_day(text: str) -> date:
    """An ISO day of a split option (a :class:`SplitError` naming it otherwise)."""
    try:
        return date.fromisoformat(text.strip())
    except ValueError:
        raise SplitError(f"split date {text!r} is not an ISO date (YYYY-MM-DD)") from None


@dataclass(frozen=True)
class SplitSpec:
    """How to split (see the module docstring); ``dates`` and ``shares`` exclude each other."""

    dates: tuple[str, str] | None = None
    shares: tuple[float, float] | None = None
    min_calls: int = study.TEST_MIN_CALLS
    include_artefacts: bool = False

    def __post_init__(self) -> None:
        if self.dates is not None and self.shares is not None:
            raise SplitOptionError("give split dates or split shares, not both")
        if self.shares is not None:
            a, b = self.shares
            if not (0 < a < 1 and 0 <= b < 1 and a + b < 1):
                raise SplitOptionError(
                    f"split shares {a},{b}: need 0 < train < 1, 0 <= calibration, sum < 1"
                )
        if self.dates is not None:
            try:
                a_day, b_day = (parse_day(d) for d in self.dates)
            except SplitError as exc:
                raise SplitOptionError(str(exc)) from None
            if b_day < a_day:
                raise SplitOptionError(
                    f"split dates {self.dates[0]},{self.dates[1]}: "
                    "calibration must end on or after the end of training"
                )
        if self.min_calls < 1:
            raise SplitOptionError(f"--min-calls {self.min_calls}: need at least 1")


def _pair(kind: type, name: str) -> Any:
    def parse(text: str) -> tuple[Any, Any]:
        parts = [p.strip() for p in text.split(",")]
        if len(parts) != 2 or not all(parts):
            raise argparse.ArgumentTypeError(f"{name} needs two comma-separated values: {text!r}")
        try:
            return kind(parts[0]), kind(parts[1])
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name}: cannot read {text!r}") from None

    return parse


def add_split_arguments(
    parser: argparse.ArgumentParser, *, min_calls: int = study.TEST_MIN_CALLS
) -> None:
    """The split options every command shares (module docstring); ``min_calls`` its default."""
    group = parser.add_mutually_exclusive_group()
    group.add_argument(
        "--split-dates",
        type=_pair(str, "--split-dates"),
        metavar="TRAIN_END,CALIB_END",
        help="last day of training and of calibration (UTC, inclusive); later streams test",
    )
    group.add_argument(
        "--split-shares",
        type=_pair(float, "--split-shares"),
        metavar="TRAIN,CALIB",
        help="shares of the streams, ordered by first call, that train and calibrate "
        "(e.g. 0.44,0.07: the study's proportions); default: the study's shares of the days",
    )
    parser.add_argument(
        "--min-calls",
        type=positive_int,
        default=min_calls,
        help=f"test streams need this many calls (default {min_calls})",
    )
    parser.add_argument(
        "--include-client-artefacts",
        action="store_true",
        help="treat streams flagged as client warm-up agents as normal streams (default: kept "
        "out of training, calibration and the normal test streams, reported apart)",
    )


def spec_from_args(args: argparse.Namespace) -> SplitSpec:
    """The :class:`SplitSpec` of parsed :func:`add_split_arguments` options."""
    return SplitSpec(
        dates=args.split_dates,
        shares=args.split_shares,
        min_calls=args.min_calls,
        include_artefacts=args.include_client_artefacts,
    )
