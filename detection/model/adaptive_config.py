"""The adaptive model's knobs (:class:`AdaptiveConfig`, saved with the model) and the command-line
options that set them (``toolwatch train --adaptive``, ``toolwatch replay``).

The model itself is :mod:`toolwatch.detection.model.adaptive`; what the knobs mean is said there
and in :mod:`toolwatch.detection.scoring.adaptive`.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from toolwatch.detection.model.config_fields import checked_fields
from toolwatch.detection.model.location import ModelError
from toolwatch.usage import EXIT_USAGE, non_negative_float, positive_float, positive_int

DAY_S: Final = 86_400.0
#: The longest time span a knob may give: the scorer keeps event time in whole microseconds
#: (a span of 1e300 hours overflowed it, and every fold failed); longer means "never" anyway,
#: which ``pool_days`` says with ``inf``.
MAX_SPAN_DAYS: Final = 36_500.0


@dataclass(frozen=True)
class AdaptiveConfig:
    """Every knob of the adaptive model and its scorer (saved with the model)."""

    #: half-life of old behaviour, days (``inf``: no decay)
    half_life_days: float = 14.0
    #: the decay floor, streams (0: off): old behaviour fades at most a factor e^(-1/F) per
    #: stream learnt, so the model keeps about F streams' weight however slow the traffic
    floor_streams: float = 0.0
    #: a closed stream waits this long before it is folded (an attack is not learnt the moment
    #: it starts: an on-call engineer can look first)
    quarantine_h: float = 24.0
    #: a stream closes after this much event time without a call
    idle_min: float = 30.0
    #: a tool is novel until seen in this many folded streams (0: no novelty cap)
    novelty_streams: float = 3.0
    #: a novel tool's order and size scores are capped at mean + this many training sd
    novelty_zcap: float = 3.0
    #: the threshold is this quantile's complement of the last ``window`` stream maxima
    target_fa: float = 0.05
    window: int = 200
    #: ... and of those closed in the last this many days (``inf``: no age limit); the oldest
    #: are kept while the pool would fall below ``min_pool``
    pool_days: float = math.inf
    #: streams with fewer calls do not enter the threshold pool (the study's test streams: 30)
    min_calls: int = 30
    #: below this many pooled maxima the frozen operating point is used
    min_pool: int = 20
    #: a new snapshot is compiled at most this often (event time, minutes)
    refresh_min: float = 60.0
    #: variant: streams that alarmed are folded too (as if an operator dismissed every alarm)
    fold_alarmed: bool = False

    def __post_init__(self) -> None:
        hours, minutes = MAX_SPAN_DAYS * 24, MAX_SPAN_DAYS * 1440
        checks = {
            "half_life_days": (self.half_life_days > 0, "> 0"),
            "floor_streams": (0 <= self.floor_streams < math.inf, ">= 0, finite"),
            "quarantine_h": (0 <= self.quarantine_h <= hours, f"from 0 to {hours:,.0f}"),
            "idle_min": (0 < self.idle_min <= minutes, f"> 0, at most {minutes:,.0f}"),
            "novelty_streams": (self.novelty_streams >= 0, ">= 0"),
            "novelty_zcap": (self.novelty_zcap > 0, "> 0"),
            "target_fa": (0 < self.target_fa < 1, "between 0 and 1"),
            "window": (self.window >= 1, ">= 1"),
            "pool_days": (
                0 < self.pool_days <= MAX_SPAN_DAYS or self.pool_days == math.inf,
                f"> 0, at most {MAX_SPAN_DAYS:,.0f}, or inf",
            ),
            "min_calls": (self.min_calls >= 1, ">= 1"),
            "min_pool": (self.min_pool >= 1, ">= 1"),
            "refresh_min": (0 <= self.refresh_min <= minutes, f"from 0 to {minutes:,.0f}"),
        }
        bad = [
            f"{name}={getattr(self, name)} (needs {rule})"
            for name, (ok, rule) in checks.items()
            if not ok
        ]
        if bad:
            raise ModelError(f"adaptive config: invalid {', '.join(bad)}", code=EXIT_USAGE)

    @property
    def half_life_s(self) -> float:
        return self.half_life_days * DAY_S

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        for name in ("half_life_days", "pool_days"):
            if math.isinf(d[name]):
                d[name] = "inf"
        return d

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> AdaptiveConfig:
        values = dict(data)
        for name in ("half_life_days", "pool_days"):
            if values.get(name) == "inf":
                values[name] = math.inf
        values, problems = checked_fields(cls, values)
        if problems:
            raise ModelError(f"adaptive config {'; '.join(problems)}")
        return cls(**values)

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> AdaptiveConfig:
        """The config of :func:`add_adaptive_arguments` options (defaults where not given)."""
        given = {field: _option(args, flag) for flag, field in ADAPTIVE_OPTIONS}
        return cls(**{k: v for k, v in given.items() if v is not None})


#: The command-line options of the adaptive model and the config field each sets
#: (``--target-fa`` is the command's own: ``train`` and ``replay`` both have one).
ADAPTIVE_OPTIONS: Final = (
    ("half-life-days", "half_life_days"),
    ("floor-streams", "floor_streams"),
    ("quarantine-hours", "quarantine_h"),
    ("novelty-streams", "novelty_streams"),
    ("target-fa", "target_fa"),
    ("pool-window", "window"),
    ("pool-days", "pool_days"),
)


def _option(args: argparse.Namespace, flag: str) -> Any:
    return getattr(args, flag.replace("-", "_"), None)


def adaptive_options_given(args: argparse.Namespace) -> list[str]:
    """The adaptive model's options given on the command line, as typed (``--pool-days``)."""
    return [f"--{flag}" for flag, _ in ADAPTIVE_OPTIONS if _option(args, flag) is not None]


def add_adaptive_arguments(parser: argparse.ArgumentParser) -> None:
    """The adaptive model's options (``toolwatch train --adaptive``, ``toolwatch replay``)."""
    group = parser.add_argument_group("adaptive model")
    group.add_argument(
        "--half-life-days", type=positive_float, help="old behaviour fades with this half-life (14)"
    )
    group.add_argument(
        "--floor-streams",
        type=non_negative_float,
        help="... but never faster than e^(-1/N) per stream learnt: the model keeps about N "
        "streams' weight however slow the traffic (0: off, the default)",
    )
    group.add_argument(
        "--quarantine-hours",
        type=non_negative_float,
        help="a closed stream waits this long to be learnt (24)",
    )
    group.add_argument(
        "--novelty-streams",
        type=non_negative_float,
        help="a tool is novel (bounded score) until seen in this many streams (3; 0: off)",
    )
    group.add_argument(
        "--pool-window",
        type=positive_int,
        help="stream maxima the threshold quantile is taken over (200)",
    )
    group.add_argument(
        "--pool-days",
        type=positive_float,
        help="... closed within this many days (default: no limit)",
    )
