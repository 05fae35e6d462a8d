"""What determines an experiment's numbers: :class:`ExperimentConfig`, validated on construction
and saved as JSON with every default resolved, so a saved run repeats exactly.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, Final

from toolwatch import study
from toolwatch.detection import ModelConfig
from toolwatch.detection.calls.split_options import SplitError, SplitSpec
from toolwatch.injection.spans.kinds import (
    ALL_KINDS,
    DEFAULT_PARAMS,
    KindParams,
    params_from_dict,
    params_to_dict,
)
from toolwatch.usage import EXIT_USAGE, UserError
from toolwatch.words import counted

#: Threshold modes: at a target false-alarm rate (the largest reachable level not above it),
#: the model's calibrated operating point, and — only when the normal test streams are few
#: (:data:`THIN_TEST`) — the next reachable level above the target (``fa_next``).
MODES: Final[tuple[str, ...]] = ("fa_target", "operating_point", "fa_next")
#: Below this many normal test streams the false-alarm levels are coarse (steps of 1/n): the
#: report shows both reachable levels around the target and warns that the split is thin.
THIN_TEST: Final = 50
#: With response ids, and the ablation without them.
VARIANTS: Final[tuple[str, ...]] = ("standard", "no_response_ids")


class ExperimentError(UserError, ValueError):
    """The experiment cannot run on this corpus / configuration (the message says why)."""


class ExperimentOptionError(ExperimentError):
    """An experiment option that cannot be meant (bad usage, exit 2)."""

    code = EXIT_USAGE


@dataclass(frozen=True)
class ExperimentConfig:
    """Everything that determines an experiment's numbers (saved as JSON with the results)."""

    #: the split (:mod:`toolwatch.detection.calls.split`): (train_end, calibration_end)
    #: inclusive days, or (train, calibration) shares of streams; neither = the default rule,
    #: resolved to the dates or shares it chose in the result's config
    split_dates: tuple[str, str] | None = None
    split_shares: tuple[float, float] | None = None
    min_calls: int = study.TEST_MIN_CALLS
    #: named variant: flagged client warm-up agents count as normal streams
    include_artefacts: bool = False
    seeds: tuple[int, ...] = (0, 1, 2, 3, 4)
    target_fa: float = 0.05
    bootstrap: int = 2000
    bootstrap_seed: int = 0
    head: int = 10
    tail: int = 10
    kinds: tuple[str, ...] = ALL_KINDS
    params: Mapping[str, KindParams] = field(default_factory=lambda: dict(DEFAULT_PARAMS))
    ablation: bool = True
    model: Mapping[str, Any] = field(default_factory=dict)  # ModelConfig overrides

    def __post_init__(self) -> None:
        try:
            self.split_spec()
        except SplitError as exc:
            raise ExperimentError(str(exc), code=exc.code) from None
        if self.head < 1 or self.tail < 0:
            raise ExperimentOptionError(
                f"--head {self.head} / --tail {self.tail}: need head >= 1, tail >= 0"
            )
        if self.min_calls < self.head + self.tail + 1:
            raise ExperimentOptionError(
                f"--min-calls {self.min_calls} leaves no insertion point between call "
                f"{self.head} and {counted(self.tail, 'call')} before the end (raise --min-calls "
                "to at "
                f"least {self.head + self.tail + 1}, or lower --head / --tail)"
            )
        if not self.seeds:
            raise ExperimentOptionError("at least one seed is needed")
        if self.bootstrap < 0:
            raise ExperimentOptionError(
                f"--bootstrap {self.bootstrap}: need 0 (no intervals) or more"
            )
        if not 0 <= self.target_fa < 1:
            raise ExperimentOptionError(
                f"target false-alarm rate {self.target_fa} is not in [0, 1)"
            )
        unknown = [k for k in self.kinds if k not in ALL_KINDS]
        if unknown:
            raise ExperimentOptionError(f"unknown kinds {unknown} (known: {', '.join(ALL_KINDS)})")
        try:
            ModelConfig.from_dict(dict(self.model))
        except (ValueError, TypeError) as exc:
            raise ExperimentOptionError(f"model configuration: {exc}") from None

    def split_spec(self) -> SplitSpec:
        """The split options as the shared :class:`SplitSpec`."""
        return SplitSpec(
            self.split_dates, self.split_shares, self.min_calls, self.include_artefacts
        )

    def to_dict(self) -> dict[str, Any]:
        """Every knob resolved (each model knob; the split as the result's config holds it,
        :func:`~toolwatch.injection.experiment.protocol.run_experiment` having resolved the
        default), so :meth:`from_dict` of it repeats the run exactly even if a default
        changes later."""
        d = asdict(self)
        d["params"] = params_to_dict(self.params)
        d["model"] = ModelConfig.from_dict(dict(self.model)).to_dict()
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
