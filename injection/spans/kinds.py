"""The nine kinds (the study's seven anomalies and two controls, in its table order) and one
frozen parameter dataclass per kind, with the study's defaults and the JSON form saved with
experiment results.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from toolwatch import study

#: The study's kinds, in its table order (the keys of ``study.DETECTION_ALL_CUSUM``).
KINDS: Final[tuple[str, ...]] = tuple(study.DETECTION_ALL_CUSUM)
#: Payload sizes of the exfiltration variants that carry provenance (issue 13): a key, a
#: document (the study's +2σ size on real traffic, ≈ 400 B) and a file; and their encodings.
PAYLOADS: Final[dict[str, int]] = {"key": 40, "document": 400, "file": 3072}
PAYLOAD_ENCODINGS: Final[tuple[str, ...]] = ("verbatim", "url", "base64")
#: Exfiltration with provenance, ``exfil_<payload>_<encoding>`` (beyond the study's record:
#: they run only on corpora whose calls carry provenance).
PROVENANCE_KINDS: Final[tuple[str, ...]] = tuple(
    f"exfil_{size}_{enc}" for size in PAYLOADS for enc in PAYLOAD_ENCODINGS
)
#: Every kind: the study's, then the provenance variants.
ALL_KINDS: Final[tuple[str, ...]] = (*KINDS, *PROVENANCE_KINDS)
CONTROL_KINDS: Final[tuple[str, ...]] = tuple(k for k in KINDS if k.startswith("control_"))
#: The study's anomalies (the single-cue summaries average over these only).
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
class ProvenanceExfiltrationParams:
    """One egress call that sends ``payload_bytes`` of an earlier local result, ``encoding``-
    written (:mod:`toolwatch.injection.spans.provenance_exfiltration`)."""

    payload_bytes: int
    encoding: str = "verbatim"
    #: a smaller window holds no result this big: the largest local result is sent instead,
    #: if it has at least this many bytes (else the run is skipped)
    min_source_bytes: int = 96
    #: egress classes of the carrier; ``None`` = every class with a measured training call
    classes: tuple[str, ...] | None = None


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
    | ProvenanceExfiltrationParams
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
    **{
        f"exfil_{size}_{enc}": ProvenanceExfiltrationParams(payload, enc)
        for size, payload in PAYLOADS.items()
        for enc in PAYLOAD_ENCODINGS
    },
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
            ProvenanceExfiltrationParams,
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
