"""What determines an experiment's numbers: :class:`ExperimentConfig`, validated on construction
and saved as JSON with every default resolved, so a saved run repeats exactly.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from datetime import date
from typing import Any, Final

from toolwatch import study
from toolwatch.collector.sources.simulator import SPLIT_DATES
from toolwatch.detection import ModelConfig
from toolwatch.injection.spans.kinds import (
    DEFAULT_PARAMS,
    KINDS,
    KindParams,
    params_from_dict,
    params_to_dict,
)
from toolwatch.usage import UserError

#: Threshold modes: at a target false-alarm rate, or the model's calibrated operating point.
MODES: Final[tuple[str, ...]] = ("fa_target", "operating_point")
#: With response ids, and the ablation without them.
VARIANTS: Final[tuple[str, ...]] = ("standard", "no_response_ids")


class ExperimentError(UserError, ValueError):
    """The experiment cannot run on this corpus / configuration (the message says why)."""


def default_split_dates() -> tuple[str, str]:
    """The study's split (the simulator's ``SPLIT_DATES``): last day of training and of
    calibration, inclusive; the test split is everything after."""
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
            a_day, b_day = (parse_day(d) for d in self.split_dates)
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


def parse_day(text: str) -> date:
    """An ISO day of a split option (an :class:`ExperimentError` naming it otherwise)."""
    try:
        return date.fromisoformat(text.strip())
    except ValueError:
        raise ExperimentError(f"split date {text!r} is not an ISO date (YYYY-MM-DD)") from None
