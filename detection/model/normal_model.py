"""The normal model: four fitted cues, their standardisation, detectors and thresholds.

Life cycle: :meth:`NormalModel.fit` on a training window (cues + the training mean and sd of
every cue set's per-call score), :meth:`NormalModel.calibrate` on a later calibration window
(operating-point thresholds), :meth:`NormalModel.save` to a JSON artifact, and
:meth:`NormalModel.load` wherever scoring happens.

Standardisation (BRIEF §3, exactly): each cue's score is standardised by its training mean and
sd, ``z = (score − mean) / sd``, and ``all = (z_order + z_size + z_time + z_failure) / 4`` — the
mean of the four standardised cues, **not** standardised again. The detectors read ``z`` for a
single cue and ``all`` itself for the cue set ``all``; CUSUM's ``k = 0.5`` is therefore half a
training σ of one cue, and half a unit of the mean of four (whose training sd is below 1: the
cues are not perfectly correlated, about 0.5 on real traffic). An sd below ``min_sd`` (0.05
nats: a cue that barely varies over the training window, such as failure when no call failed
in training) is replaced by 1, i.e. the cue's raw units: dividing by the smoothing prior's
tiny spread would turn every success of a rarely seen tool into a huge z.

Named variants, off by default, each with its measured effect in ``docs/ARCHITECTURE.md``:
``all_restandardised`` (divide ``all`` by its own training sd before the detectors: the
pre-issue-12 behaviour, which halves ``k`` in ``all`` units), ``ewma_start="first"`` (EWMA
initialised at the first score) and ``time_tail="floor"`` (every gap below the training
minimum ties at one floor score).

The artifact is human-readable JSON (no pickle): ``format``, ``version``, the config, the
data windows with their counts, every cue's parameters, the standardisation, the thresholds
and a SHA-256 ``checksum`` of all of that. Loading checks each, and a missing, corrupt,
edited, foreign or other-version file raises :class:`ModelError` naming the file and the
problem.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from toolwatch.collector.store.durable import write_text_durably
from toolwatch.detection.calls.frame import CallFrame, prepare
from toolwatch.detection.cues.base import Cue
from toolwatch.detection.cues.failure import FailureCue
from toolwatch.detection.cues.names import CUE_NAMES, CUE_SETS
from toolwatch.detection.cues.novelty import NoveltyCue
from toolwatch.detection.cues.order import OrderCue
from toolwatch.detection.cues.provenance import ProvenanceCue
from toolwatch.detection.cues.size import SizeCue
from toolwatch.detection.cues.timing import TimeCue
from toolwatch.detection.detectors.base import Detector
from toolwatch.detection.detectors.cusum import CUSUM
from toolwatch.detection.detectors.ewma import EWMA
from toolwatch.detection.detectors.names import DETECTORS, stat_column
from toolwatch.detection.detectors.point import Point
from toolwatch.detection.model.config import ModelConfig
from toolwatch.detection.model.location import ModelError
from toolwatch.detection.model.novelty_set import NoveltySet
from toolwatch.detection.model.thresholds import operating_threshold
from toolwatch.documents import loads_json

FORMAT: Final = "toolwatch.normal-model"
VERSION: Final = 2

CUE_CLASSES: Final[dict[str, type[Cue]]] = {
    "order": OrderCue,
    "size": SizeCue,
    "time": TimeCue,
    "failure": FailureCue,
}


@dataclass
class NormalModel:
    """Fitted cues + standardisation + detectors (+ thresholds once calibrated)."""

    config: ModelConfig
    cues: dict[str, Cue]
    #: cue set -> (mean, sd) of its training per-call score
    standardisation: dict[str, tuple[float, float]]
    #: cue set -> detector -> operating-point threshold (empty until calibrated)
    thresholds: dict[str, dict[str, float]] = field(default_factory=dict)
    #: data windows and counts: {"train": {...}, "calibration": {...}}
    data: dict[str, Any] = field(default_factory=dict)
    created: str = ""
    checksum: str = ""
    #: :attr:`model_id`'s digest, fixed with the checksum when saved or loaded (a live model's
    #: adaptive state moves on, its id does not)
    identity: str = field(default="", repr=False, compare=False)
    #: the adaptive part, as saved (:mod:`toolwatch.detection.model.adaptive` reads it)
    adaptive: dict[str, Any] | None = None
    #: per-egress-class payload thresholds (:mod:`toolwatch.detection.cues.provenance`); not
    #: part of ``all``: the live scorer alerts on it at once. ``None`` in artifacts written
    #: before it existed (then no provenance alert is raised)
    provenance: ProvenanceCue | None = None
    #: the novelty cue set: the cue, its training (mean, sd) and, once calibrated, its
    #: operating-point threshold per detector; ``None`` in older artifacts
    novelty: NoveltySet | None = None

    # ---------------------------------------------------------------- construction

    @classmethod
    def fit(
        cls,
        train_calls: pa.Table,
        config: ModelConfig | Mapping[str, Any] | None = None,
        *,
        window: Mapping[str, Any] | None = None,
    ) -> NormalModel:
        """Fit the cues and their standardisation on the training calls.

        ``window`` describes how the calls were selected (saved with the counts).
        """
        cfg = _config(config)
        frame = _frame(train_calls, "training")
        if frame.n == 0:
            raise ModelError("the training window has no calls: nothing to learn from")
        cues: dict[str, Cue] = {
            "order": OrderCue(session_mix=cfg.order_session_mix, smoothing=cfg.order_smoothing),
            "size": SizeCue(min_count=cfg.size_min_count, min_sd=cfg.size_min_sd),
            "time": TimeCue(max_knots=cfg.time_max_knots, tail=cfg.time_tail),
            "failure": FailureCue(prior_strength=cfg.failure_prior_strength),
        }
        for cue in cues.values():
            cue.fit(frame)
        model = cls.from_cues(cues, frame, cfg, window=window)
        model.provenance = ProvenanceCue(
            rule=cfg.provenance_rule, floor=cfg.provenance_floor, cap=cfg.provenance_cap
        ).fit(frame)
        model.data["train"]["provenance_unmeasured"] = ProvenanceCue.unmeasured(frame)
        cue = NoveltyCue(
            key=cfg.novelty_key, warmup=cfg.novelty_warmup, unseen=cfg.novelty_unseen
        ).fit(frame)
        model.novelty = NoveltySet(cue, _mean_sd(cue.score_many(frame), cfg.min_sd))
        return model

    @classmethod
    def from_cues(
        cls,
        cues: Mapping[str, Cue],
        frame: CallFrame,
        config: ModelConfig,
        *,
        window: Mapping[str, Any] | None = None,
    ) -> NormalModel:
        """A model from fitted cues, standardised on ``frame`` (their training calls).

        :meth:`fit` fits the cues first; the adaptive model
        (:mod:`toolwatch.detection.model.adaptive`) compiles them from decayed statistics.
        """
        standardisation: dict[str, tuple[float, float]] = {}
        z: dict[str, np.ndarray] = {}
        for name in CUE_NAMES:
            raw = cues[name].score_many(frame)
            standardisation[name] = _mean_sd(raw, config.min_sd)
            mean, sd = standardisation[name]
            z[name] = (raw - mean) / sd
        combined = (z["order"] + z["size"] + z["time"] + z["failure"]) / 4.0
        standardisation["all"] = _mean_sd(combined, config.min_sd)
        return cls(
            config=config,
            cues=dict(cues),
            standardisation=dict(sorted(standardisation.items())),
            data={"train": {**_describe(frame), "window": dict(window or {})}},
            created=datetime.now(UTC).isoformat(timespec="seconds"),
        )

    def score_frame(self, frame: CallFrame) -> dict[str, np.ndarray]:
        """Scores and detector statistics of a prepared frame, by output column name."""
        std = self.standardisation
        out: dict[str, np.ndarray] = {}
        z: dict[str, np.ndarray] = {}
        for name in CUE_NAMES:
            raw = self.cues[name].score_many(frame)
            out[name] = raw
            mean, sd = std[name]
            z[name] = (raw - mean) / sd
        out["all"] = (z["order"] + z["size"] + z["time"] + z["failure"]) / 4.0
        x = {"all": self.all_statistic_input(out["all"]), **z}
        # one sweep per detector for all cue sets: the five series laid end to end as streams
        n = frame.n
        flat = np.concatenate([x[s] for s in CUE_SETS])
        starts = np.tile(frame.start, len(CUE_SETS))
        detectors = self.detectors()
        stats = {det: detectors[det].run(flat, starts) for det in DETECTORS}
        for j, cue_set in enumerate(CUE_SETS):
            for det in DETECTORS:
                out[stat_column(cue_set, det)] = stats[det][j * n : (j + 1) * n]
        return out

    def calibrate(
        self, calib_calls: pa.Table, *, window: Mapping[str, Any] | None = None
    ) -> NormalModel:
        """Set the operating-point threshold of every cue set × detector; returns ``self``."""
        frame = _frame(calib_calls, "calibration")
        if frame.n == 0:
            raise ModelError("the calibration window has no calls: cannot set thresholds")
        stats = self.score_frame(frame)
        q = self.config.operating_quantile
        thresholds: dict[str, dict[str, float]] = {}
        alarms: dict[str, dict[str, int]] = {}
        for s in CUE_SETS:
            thresholds[s] = {}
            alarms[s] = {}
            for d in DETECTORS:
                values = stats[stat_column(s, d)]
                thresholds[s][d] = operating_threshold(values, q)
                over = values > thresholds[s][d]
                alarms[s][d] = int(np.unique(frame.stream[over]).shape[0])
        self.thresholds = thresholds
        if self.novelty is not None:
            novelty = self.novelty_statistics(frame)
            self.novelty.thresholds = {
                d: operating_threshold(novelty[stat_column("novelty", d)], q) for d in DETECTORS
            }
        self.data["calibration"] = {
            **_describe(frame),
            "window": dict(window or {}),
            "streams_alarming": alarms,
        }
        self.checksum = self.identity = ""
        return self

    # ---------------------------------------------------------------- use

    @property
    def calibrated(self) -> bool:
        return bool(self.thresholds)

    def novelty_statistics(self, frame: CallFrame) -> dict[str, np.ndarray]:
        """The novelty cue's score (``novelty``) and its detector statistics
        (``novelty_point`` …) for a prepared frame; empty without the cue."""
        if self.novelty is None:
            return {}
        raw = self.novelty.cue.score_many(frame)
        mean, sd = self.novelty.standardisation
        z = (raw - mean) / sd
        out = {"novelty": raw}
        for det, detector in self.detectors().items():
            out[stat_column("novelty", det)] = detector.run(z, frame.start)
        return out

    def threshold(self, cue_set: str, detector: str) -> float:
        """The operating-point threshold of ``cue_set`` × ``detector``."""
        if not self.thresholds:
            raise ModelError("the model is not calibrated: run calibrate() (toolwatch train)")
        try:
            return self.thresholds[cue_set][detector]
        except KeyError:
            raise ModelError(f"no threshold for {cue_set} × {detector}") from None

    def all_statistic_input(self, combined: np.ndarray) -> np.ndarray:
        """What the detectors read for ``all``: the mean of the four z itself (the study), or
        re-standardised by its training sd under the ``all_restandardised`` variant."""
        if not self.config.all_restandardised:
            return combined
        mean, sd = self.standardisation["all"]
        return (combined - mean) / sd

    def detectors(self) -> dict[str, Detector]:
        """Fresh detector prototypes, by name, with the configured parameters."""
        return {
            "point": Point(),
            "ewma": EWMA(alpha=self.config.ewma_alpha, start=self.config.ewma_start),
            "cusum": CUSUM(k=self.config.cusum_k),
        }

    @property
    def model_id(self) -> str:
        """Short id of this model's content: 12 hex digits of the SHA-256 of the artifact
        without its creation time, so the same data and configuration give the same id (the
        checksum, which covers the time too, differed between two identical trainings)."""
        digest = self.identity or _identity(self._body())
        return digest.split(":", 1)[-1][:12]

    # ---------------------------------------------------------------- artifact

    def _body(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "version": VERSION,
            "created": self.created,
            "toolwatch_version": _toolwatch_version(),
            "config": self.config.to_dict(),
            "data": self.data,
            "cues": {name: self.cues[name].to_dict() for name in CUE_NAMES},
            "standardisation": {
                s: {"mean": m, "sd": sd} for s, (m, sd) in self.standardisation.items()
            },
            "thresholds": self.thresholds,
            **({"adaptive": self.adaptive} if self.adaptive is not None else {}),
            **({"provenance": self.provenance.to_dict()} if self.provenance is not None else {}),
            **({"novelty": self.novelty.to_dict()} if self.novelty is not None else {}),
        }

    def to_dict(self) -> dict[str, Any]:
        body = self._body()
        return {**body, "checksum": _checksum(body)}

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the artifact atomically and durably (``path.tmp``, fsync, rename); returns the
        path: a power cut leaves the old model or the new one, never an empty file."""
        path = Path(path)
        doc = self.to_dict()
        self.checksum = doc["checksum"]
        self.identity = _identity(doc)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            write_text_durably(path, _pretty(doc) + "\n")
        except OSError as exc:
            raise ModelError(f"cannot write the model file {path}: {exc.strerror or exc}") from None
        return path

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any], *, source: str = "model") -> NormalModel:
        """Rebuild a model from its artifact dict, checking format, version and checksum."""
        if not isinstance(doc, Mapping):
            raise ModelError(f"{source} is not a toolwatch model (a JSON object is expected)")
        if doc.get("format") != FORMAT:
            raise ModelError(
                f"{source} is not a toolwatch model (format {doc.get('format')!r}, "
                f"expected {FORMAT!r})"
            )
        if doc.get("version") != VERSION:
            raise ModelError(
                f"{source} is a version {doc.get('version')!r} model; this toolwatch reads "
                f"version {VERSION} — retrain it with `toolwatch train`"
            )
        body = {k: v for k, v in doc.items() if k != "checksum"}
        try:
            expected = _checksum(body)
        except (TypeError, ValueError) as exc:
            raise ModelError(f"{source} holds values that are not plain JSON: {exc}") from None
        if doc.get("checksum") != expected:
            raise ModelError(
                f"{source} does not match its checksum: the file was edited or damaged "
                "(retrain with `toolwatch train` or restore the original)"
            )
        where = "config"
        try:
            config = ModelConfig.from_dict(doc["config"])
            cues: dict[str, Cue] = {}
            for name in CUE_NAMES:
                where = f"cues.{name}"
                cues[name] = CUE_CLASSES[name].from_dict(doc["cues"][name])
            where = "standardisation"
            standardisation = {
                s: (
                    float(doc["standardisation"][s]["mean"]),
                    float(doc["standardisation"][s]["sd"]),
                )
                for s in CUE_SETS
            }
            if any(not sd > 0 for _, sd in standardisation.values()):
                raise ValueError("an sd is not positive")
            where = "thresholds"
            thresholds = {
                s: {d: float(v) for d, v in dets.items()} for s, dets in doc["thresholds"].items()
            }
            if thresholds and (
                set(thresholds) != set(CUE_SETS)
                or any(set(d) != set(DETECTORS) for d in thresholds.values())
            ):
                raise ValueError(f"thresholds must cover {CUE_SETS} × {DETECTORS}")
            where = "data"
            data = dict(doc["data"])
            where = "adaptive"
            adaptive = doc.get("adaptive")
            if adaptive is not None and not isinstance(adaptive, Mapping):
                raise ValueError("not a JSON object")
            where = "provenance"
            provenance = ProvenanceCue.from_dict(doc["provenance"]) if "provenance" in doc else None
            where = "novelty"
            novelty = NoveltySet.from_dict(doc["novelty"]) if "novelty" in doc else None
        except ModelError as exc:
            raise ModelError(f"{source}: {exc}") from None
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            detail = f"missing field {exc}" if isinstance(exc, KeyError) else str(exc)
            raise ModelError(f"{source}: invalid {where}: {detail}") from None
        return cls(
            config=config,
            cues=cues,
            standardisation=standardisation,
            thresholds=thresholds,
            data=data,
            created=str(doc.get("created", "")),
            checksum=expected,
            identity=_identity(doc),
            adaptive=None if adaptive is None else dict(adaptive),
            provenance=provenance,
            novelty=novelty,
        )

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> NormalModel:
        """Read an artifact written by :meth:`save`; :class:`ModelError` if it is unusable."""
        path = Path(path)
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise ModelError(
                f"model file {path} not found (create one with `toolwatch train`)"
            ) from None
        except (OSError, UnicodeDecodeError) as exc:
            raise ModelError(f"model file {path} cannot be read: {exc}") from None
        try:
            doc = loads_json(text)
        except json.JSONDecodeError as exc:
            raise ModelError(
                f"model file {path} is not valid JSON (line {exc.lineno}, column {exc.colno}: "
                f"{exc.msg}); it may be truncated"
            ) from None
        return cls.from_dict(doc, source=f"model file {path}")


# -------------------------------------------------------------------------- helpers


def _config(config: ModelConfig | Mapping[str, Any] | None) -> ModelConfig:
    if config is None:
        return ModelConfig()
    if isinstance(config, ModelConfig):
        return config
    return ModelConfig.from_dict(config)


def _frame(calls: pa.Table, what: str) -> CallFrame:
    try:
        return prepare(calls)
    except ValueError as exc:
        raise ModelError(f"{what} calls: {exc}") from None


def _mean_sd(values: np.ndarray, min_sd: float) -> tuple[float, float]:
    if values.shape[0] == 0:
        return 0.0, 1.0
    mean = float(values.mean())
    sd = float(values.std(ddof=1)) if values.shape[0] > 1 else 0.0
    return mean, (sd if sd >= min_sd else 1.0)


def _describe(frame: CallFrame) -> dict[str, Any]:
    """Counts and time range of a window's calls (saved in the artifact)."""
    first = last = None
    if frame.n:
        first = datetime.fromtimestamp(int(frame.start_us.min()) / 1e6, UTC).isoformat()
        last = datetime.fromtimestamp(int(frame.start_us.max()) / 1e6, UTC).isoformat()
    sessions = len(pc.unique(frame.table.column("session_id"))) if frame.n else 0
    return {
        "calls": frame.n,
        "sessions": sessions,
        "streams": frame.stream_count,
        "tools": len(frame.tool_names),
        "failures": int(frame.failed.sum()),
        "first_call": first,
        "last_call": last,
    }


def _identity(doc: Mapping[str, Any]) -> str:
    """The digest of what a model is: its artifact but the creation time and the checksum."""
    return _checksum({k: v for k, v in doc.items() if k not in ("created", "checksum")})


def _checksum(body: Mapping[str, Any]) -> str:
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return "sha256:" + hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def _toolwatch_version() -> str:
    try:
        from importlib.metadata import version

        return version("toolwatch")
    except Exception:  # not installed as a distribution (e.g. a source checkout)
        return "unknown"


def _pretty(value: Any, indent: int = 0) -> str:
    """JSON with nested objects indented but lists of numbers/strings on one line."""
    pad = " " * indent
    inner = " " * (indent + 2)
    if isinstance(value, Mapping):
        if not value:
            return "{}"
        items = [f"{inner}{json.dumps(str(k))}: {_pretty(v, indent + 2)}" for k, v in value.items()]
        return "{\n" + ",\n".join(items) + "\n" + pad + "}"
    if isinstance(value, (list, tuple)):
        if all(not isinstance(v, (Mapping, list, tuple)) for v in value):
            return json.dumps(list(value), allow_nan=False)
        items = [f"{inner}{_pretty(v, indent + 2)}" for v in value]
        return "[\n" + ",\n".join(items) + "\n" + pad + "]"
    return json.dumps(value, allow_nan=False)
