"""The nine kinds (the study's seven anomalies and two controls, in its table order) and one
frozen parameter dataclass per kind, with the study's defaults and the JSON form saved with
experiment results.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from toolwatch import study

#: Kind keys, in the study's table order (the keys of ``study.DETECTION_ALL_CUSUM``).
KINDS: Final[tuple[str, ...]] = tuple(study.DETECTION_ALL_CUSUM)
CONTROL_KINDS: Final[tuple[str, ...]] = tuple(k for k in KINDS if k.startswith("control_"))
ANOMALY_KINDS: Final[tuple[str, ...]] = tuple(k for k in KINDS if k not in CONTROL_KINDS)


@dataclass(frozen=True, slots=True)
class ExfiltrationParams:
    """One network call after a Read, input = tool mean + k·σ of training log input bytes."""

    sigma_low: float
    sigma_high: float
    #: network tools; ``None`` = WebFetch and every ``…navigate`` tool seen in training (a
    #: browser's go-to-URL; not ``navigate_back``, which takes no URL)
    network_tools: tuple[str, ...] | None = None
    read_tools: tuple[str, ...] = ("Read",)


@dataclass(frozen=True, slots=True)
class OutOfScopeParams:
    calls: int = 3
    max_training_calls: int = 40


@dataclass(frozen=True, slots=True)
class RunawayParams:
    repeats: int = 15
    failure_share: float = 0.7
    gap_s: tuple[float, float] = (1.5, 4.0)


@dataclass(frozen=True, slots=True)
class BurstParams:
    calls: int = 10
    gap_s: tuple[float, float] = (0.05, 0.8)
    #: False: every re-timed call is its own response; True: they join the previous response
    same_response: bool = False


@dataclass(frozen=True, slots=True)
class HijackParams:
    calls: int = 8


@dataclass(frozen=True, slots=True)
class OtherNormalParams:
    calls: int = 8


KindParams = (
    ExfiltrationParams
    | OutOfScopeParams
    | RunawayParams
    | BurstParams
    | HijackParams
    | OtherNormalParams
)

DEFAULT_PARAMS: Final[dict[str, KindParams]] = {
    "burst": BurstParams(),
    "runaway_retry": RunawayParams(),
    "sequence_hijack": HijackParams(),
    "large_exfiltration": ExfiltrationParams(4.0, 8.0),
    "exfiltration_2sigma": ExfiltrationParams(2.0, 2.0),
    "key_exfiltration": ExfiltrationParams(1.0, 1.0),
    "out_of_scope_tool": OutOfScopeParams(),
    "control_other_normal": OtherNormalParams(),
    "control_same_response_burst": BurstParams(same_response=True),
}


def params_to_dict(params: Mapping[str, KindParams]) -> dict[str, dict[str, object]]:
    """JSON-ready parameters (saved with experiment results so a run can be repeated)."""
    out: dict[str, dict[str, object]] = {}
    for kind, p in params.items():
        out[kind] = {"type": type(p).__name__} | {
            name: getattr(p, name) for name in p.__dataclass_fields__
        }
    return out


def params_from_dict(data: Mapping[str, Mapping[str, object]]) -> dict[str, KindParams]:
    types: dict[str, type] = {
        t.__name__: t
        for t in (
            ExfiltrationParams,
            OutOfScopeParams,
            RunawayParams,
            BurstParams,
            HijackParams,
            OtherNormalParams,
        )
    }
    out: dict[str, KindParams] = {}
    for kind, values in data.items():
        kw = {k: (tuple(v) if isinstance(v, list) else v) for k, v in values.items()}
        cls = types[str(kw.pop("type"))]
        out[kind] = cls(**kw)
    return out
