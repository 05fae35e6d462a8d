"""The normal model's knobs (:class:`ModelConfig`, saved in every artifact) and the error every
model step raises for a user's mistake (:class:`ModelError`).

A config comes from code, from ``--model-config KEY=VALUE`` or from a saved artifact; the last
two are checked field by field (type, then range) before any fit starts, so a wrong value is one
line naming the field, never a failure deep inside a fit.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from toolwatch.detection.cues.names import CUE_SETS
from toolwatch.detection.cues.novelty import KEYS as NOVELTY_KEYS
from toolwatch.detection.cues.novelty import UNSEEN as NOVELTY_UNSEEN
from toolwatch.detection.cues.order import SMOOTHINGS as ORDER_SMOOTHINGS
from toolwatch.detection.cues.provenance import RULES as PROVENANCE_RULES
from toolwatch.detection.cues.timing import TAILS
from toolwatch.detection.detectors.ewma import STARTS
from toolwatch.detection.detectors.names import DETECTORS, stat_column
from toolwatch.detection.model.config_fields import checked_fields
from toolwatch.detection.model.location import ModelError


@dataclass(frozen=True)
class ModelConfig:
    """Every knob of the normal model (saved in the artifact)."""

    ewma_alpha: float = 0.3
    cusum_k: float = 0.5
    #: operating point: alarm above this quantile of calibration call statistics
    operating_quantile: float = 0.999
    order_session_mix: bool = True
    #: named variants: the order cue's global bigram smoothed by interpolated Kneser–Ney
    #: ("kneser_ney") or over the open-vocabulary unigram ("witten_bell_novel")
    order_smoothing: str = "witten_bell"
    size_min_count: int = 5
    size_min_sd: float = 0.25
    failure_prior_strength: float = 2.0
    time_max_knots: int = 5000
    #: the time cue below the training minimum: "graded" (the study) or "floor" (variant)
    time_tail: str = "graded"
    #: EWMA's start: "zero" (the study, E₋₁ = 0) or "first" (variant: E₀ = x₀)
    ewma_start: str = "zero"
    #: variant: standardise ``all`` again by its own training sd before the detectors
    all_restandardised: bool = False
    #: standardisation: an sd below this (nats; real cues have about 0.5-2) is replaced by 1 —
    #: a cue that barely varies in training, e.g. failure with no failure in training, whose
    #: successes differ only by the smoothing prior (sd ~1e-6 would make them z ~30)
    min_sd: float = 0.05
    #: statistics that raise live alerts and flag sessions in a scan (``<cue set>_<detector>``)
    alert_on: tuple[str, ...] = ("all_cusum",)
    #: the provenance cue's threshold rule: "capped" (research rule B) or "learned_max" (A)
    provenance_rule: str = "capped"
    #: design payload size (rule "capped") and the floor of every class's threshold, bytes
    provenance_cap: int = 32
    provenance_floor: int = 16
    #: the novelty cue (a cue set of its own beside the study's): key "tool" or "server", and
    #: how many calls a stream's first uses are not counted at its start
    novelty_key: str = "tool"
    novelty_warmup: int = 5
    #: named option: "skip" = tools never seen in training score 0 in the novelty cue
    novelty_unseen: str = "score"
    #: named option: the live scorer also alerts when novelty·<this detector> crosses its
    #: operating point (``None``: novelty is measured, not alerted on)
    novelty_alert: str | None = None

    def __post_init__(self) -> None:
        valid = {stat_column(s, d) for s in CUE_SETS for d in DETECTORS}
        bad = [a for a in self.alert_on if a not in valid]
        if bad:
            raise ModelError(
                f"config alert_on names unknown statistics {bad}; valid: {sorted(valid)}"
            )
        if not 0.0 < self.ewma_alpha <= 1.0:
            raise ModelError(f"config ewma_alpha must be in (0, 1], got {self.ewma_alpha}")
        for name, ok, wanted in (
            ("cusum_k", self.cusum_k >= 0, ">= 0"),
            ("size_min_count", self.size_min_count >= 1, ">= 1"),
            ("size_min_sd", self.size_min_sd > 0, "> 0"),
            ("failure_prior_strength", self.failure_prior_strength > 0, "> 0"),
            ("time_max_knots", self.time_max_knots >= 2, ">= 2"),
            ("min_sd", self.min_sd > 0, "> 0"),
        ):
            if not ok:
                raise ModelError(f"config {name} must be {wanted}, got {getattr(self, name)}")
        if self.time_tail not in TAILS:
            raise ModelError(f"config time_tail must be one of {TAILS}, got {self.time_tail!r}")
        if self.ewma_start not in STARTS:
            raise ModelError(f"config ewma_start must be one of {STARTS}, got {self.ewma_start!r}")
        if not 1 <= self.provenance_floor <= self.provenance_cap:
            raise ModelError(
                "config needs 1 <= provenance_floor <= provenance_cap, got "
                f"{self.provenance_floor} and {self.provenance_cap}"
            )
        for name, value, allowed in (
            ("order_smoothing", self.order_smoothing, ORDER_SMOOTHINGS),
            ("provenance_rule", self.provenance_rule, PROVENANCE_RULES),
            ("novelty_key", self.novelty_key, NOVELTY_KEYS),
            ("novelty_unseen", self.novelty_unseen, NOVELTY_UNSEEN),
            ("novelty_alert", self.novelty_alert, (None, *DETECTORS)),
        ):
            if value not in allowed:
                raise ModelError(f"config {name} must be one of {allowed}, got {value!r}")
        if self.novelty_warmup < 0:
            raise ModelError(f"config novelty_warmup must be >= 0, got {self.novelty_warmup}")
        if not 0.0 < self.operating_quantile <= 1.0:
            raise ModelError(
                f"config operating_quantile must be in (0, 1], got {self.operating_quantile}"
            )

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["alert_on"] = list(self.alert_on)
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ModelConfig:
        values = dict(data)
        if isinstance(values.get("alert_on"), str):  # ``alert_on=all_cusum,time_ewma``
            values["alert_on"] = [s.strip() for s in values["alert_on"].split(",") if s.strip()]
        values, problems = checked_fields(cls, values)
        if problems:
            raise ModelError(f"config {'; '.join(problems)}")
        return cls(**values)
