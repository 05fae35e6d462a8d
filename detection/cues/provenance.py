"""The ``provenance`` cue: does a call send off the machine more bytes of earlier *local* tool
results than normal traffic of its egress class ever does?

The numbers come from the instrumentation (:mod:`toolwatch.instrumentation.provenance`, measured
in the agent's process) or the transcript importer: per call its egress class (``none``, ``web``,
``browser``, ``http``, ``shell``, ``script``) and its *payload* — the longest run
(``payload_longest``) and the total (``payload_total``) of argument bytes that leave the machine
and reproduce an earlier local result, after decoding. Content never reaches detection.

**Thresholds, per egress class, learned from the training split's normal calls** (issue 13
research §4). For class ``c`` with normal calls, ``learned = max(floor, max payload)`` for the
longest run and for the total (``floor`` = 16 B, the shingle length: shorter runs are not
measured reliably). Two rules:

* ``capped`` (**default**, research rule B): ``min(cap, learned)`` with ``cap`` = 32 B, the
  design payload size (the smallest secret the cue must catch: a 40 B key). On dev-real it
  catches keys, documents and files in every class at 2.9 % test-session false alarms;
* ``learned_max`` (named option, research rule A): ``learned`` uncapped — fewer false alarms
  (1.3 %), but a key sent by ``shell`` or ``script``, whose normal payloads reach 68 / 163 B,
  is missed.

A class without normal traffic gets the floor, except ``http``, which borrows ``web``'s
thresholds (both send to a third party by URL and dev-real has no ``http`` call).

**Score** of a call = ``max(payload_longest / T_longest, payload_total / T_total)`` of its class;
the call *exceeds* when the score is above 1 (either measure above its threshold). ``none``
calls score 0. A call without provenance (null ``egress`` or payload: not measured — older
records, provenance off) scores 0 and never alarms; callers count them
(:meth:`ProvenanceCue.unmeasured`). The score has no per-stream state: the live scorer raises an
alert at the very call (cue ``provenance``, statistic ``point``), never after a CUSUM.

Use (what the live scorer and the experiment do)::

    cue = ProvenanceCue().fit(frame)                     # or ProvenanceCue(rule="learned_max")
    verdict = cue.check("shell", 412, 412)               # None when not measured
    if verdict is not None and verdict.exceeds:
        text = verdict.explain(source_tool="Read", encoding="base64")

The thresholds are saved in the model artifact (:meth:`to_dict`) by ``toolwatch train``.

>>> cue = ProvenanceCue.from_dict({"rule": "capped", "floor": 16, "cap": 32,
...     "thresholds": {"web": [23, 23]}, "normal_calls": {"web": 590}})
>>> cue.check("web", 40, 40).exceeds, cue.check("web", 20, 20).exceeds, cue.check(None, 1, 1)
(True, False, None)
>>> cue.check("shell", 40, 40).threshold_longest   # no normal shell traffic: the floor
16
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Final

import numpy as np

from toolwatch.conventions import EGRESS_CLASSES, EGRESS_NONE
from toolwatch.detection.calls.frame import CallFrame
from toolwatch.detection.cues.base import Call, Cue, StreamContext

#: Threshold rules: research rule B (default) and rule A (named option).
RULES: Final[tuple[str, ...]] = ("capped", "learned_max")
#: Classes that send data off the machine (every egress class but ``none``).
SENDING_CLASSES: Final[tuple[str, ...]] = tuple(c for c in EGRESS_CLASSES if c != EGRESS_NONE)
#: A class without normal traffic borrows another's thresholds.
_BORROWS: Final = {"http": "web"}
#: A source tool name longer than this is cut in an explanation (names are structure; the cap
#: keeps a misbehaving client from writing an essay into the alert).
_MAX_TOOL_NAME: Final = 128


@dataclass(frozen=True, slots=True)
class ProvenanceVerdict:
    """How one measured call compares with its egress class's thresholds."""

    egress: str
    payload_longest: int
    payload_total: int
    threshold_longest: int
    threshold_total: int

    @property
    def score(self) -> float:
        """``max(longest / T_longest, total / T_total)``; above 1 = exceeds (0 for ``none``)."""
        if self.egress == EGRESS_NONE:
            return 0.0
        return max(
            self.payload_longest / self.threshold_longest,
            self.payload_total / self.threshold_total,
        )

    @property
    def exceeds(self) -> bool:
        return self.score > 1.0

    @property
    def measure(self) -> tuple[str, int, int]:
        """The measure that exceeds most: (``longest``/``total``, bytes, threshold bytes)."""
        if self.payload_longest / self.threshold_longest >= (
            self.payload_total / self.threshold_total
        ):
            return "longest", self.payload_longest, self.threshold_longest
        return "total", self.payload_total, self.threshold_total

    def explain(self, source_tool: str | None = None, encoding: str | None = None) -> str:
        """One line with numbers, the egress class, the source tool's name and the encoding —
        never content."""
        source = (source_tool or "unknown tool")[:_MAX_TOOL_NAME]
        text = (
            f"{self.payload_longest} B of {source}'s result sent by {self.egress} egress "
            f"(longest run {self.payload_longest} B vs {self.threshold_longest} B, "
            f"total {self.payload_total} B vs {self.threshold_total} B"
        )
        if encoding and encoding not in ("none", "verbatim"):
            text += f", {encoding}-encoded"
        return text + ")"


class ProvenanceCue(Cue):
    """Per-egress-class payload thresholds (see the module docstring)."""

    name: ClassVar[str] = "provenance"

    def __init__(self, rule: str = "capped", floor: int = 16, cap: int = 32) -> None:
        if rule not in RULES:
            raise ValueError(f"provenance rule must be one of {RULES}, got {rule!r}")
        if floor < 1 or cap < floor:
            raise ValueError(f"provenance needs 1 <= floor <= cap (got floor {floor}, cap {cap})")
        self.rule = rule
        self.floor = int(floor)
        self.cap = int(cap)
        #: class -> (longest, total) thresholds in bytes, for every sending class
        self.thresholds: dict[str, tuple[int, int]] = {}
        #: class -> normal measured calls it was learnt from
        self.normal_calls: dict[str, int] = {}

    # ----------------------------------------------------------------- fitting

    @property
    def fitted(self) -> bool:
        return bool(self.thresholds)

    def fit(self, frame: CallFrame) -> ProvenanceCue:
        measured = frame.payload_longest >= 0
        learned: dict[str, tuple[int, int]] = {}
        self.normal_calls = {}
        for code, cls in enumerate(EGRESS_CLASSES):
            if cls == EGRESS_NONE:
                continue
            mine = measured & (frame.egress == code)
            count = int(mine.sum())
            if count:
                self.normal_calls[cls] = count
                learned[cls] = (
                    max(self.floor, int(frame.payload_longest[mine].max())),
                    max(self.floor, int(frame.payload_total[mine].max())),
                )
        self.thresholds = self._resolve(learned)
        return self

    def _resolve(self, learned: Mapping[str, tuple[int, int]]) -> dict[str, tuple[int, int]]:
        out: dict[str, tuple[int, int]] = {}
        for cls in SENDING_CLASSES:
            pair = learned.get(cls) or learned.get(_BORROWS.get(cls, ""))
            lon, tot = pair or (self.floor, self.floor)
            if self.rule == "capped":
                lon, tot = min(self.cap, lon), min(self.cap, tot)
            out[cls] = (lon, tot)
        return out

    # ----------------------------------------------------------------- checking

    def check(
        self, egress: str | None, payload_longest: int | None, payload_total: int | None
    ) -> ProvenanceVerdict | None:
        """The verdict on one call; ``None`` when it was not measured (null egress/payload on
        a sending call). Unknown classes are ``ValueError``."""
        self._check_fitted()
        if egress is None:
            return None
        if egress == EGRESS_NONE:
            return ProvenanceVerdict(EGRESS_NONE, 0, 0, 1, 1)
        if payload_longest is None:
            return None
        try:
            lon, tot = self.thresholds[egress]
        except KeyError:
            raise ValueError(f"unknown egress class {egress!r} (known: {EGRESS_CLASSES})") from None
        total = payload_longest if payload_total is None else payload_total
        return ProvenanceVerdict(egress, int(payload_longest), int(total), lon, tot)

    def score_many(self, frame: CallFrame) -> np.ndarray:
        """Scores of every call (0 where not measured or ``none``)."""
        self._check_fitted()
        scores = np.zeros(frame.n, dtype=np.float64)
        measured = frame.payload_longest >= 0
        total = np.where(frame.payload_total >= 0, frame.payload_total, frame.payload_longest)
        for code, cls in enumerate(EGRESS_CLASSES):
            if cls == EGRESS_NONE:
                continue
            mine = measured & (frame.egress == code)
            if mine.any():
                lon, tot = self.thresholds[cls]
                scores[mine] = np.maximum(frame.payload_longest[mine] / lon, total[mine] / tot)
        return scores

    @staticmethod
    def unmeasured(frame: CallFrame) -> int:
        """Calls of ``frame`` without provenance (they never alarm)."""
        return int(((frame.egress < 0) | ((frame.egress > 0) & (frame.payload_longest < 0))).sum())

    def score_one(self, call: Call, ctx: StreamContext, state: Any) -> float:
        verdict = self.check(call.egress, call.payload_longest, call.payload_total)
        return 0.0 if verdict is None else verdict.score

    # ----------------------------------------------------------------- artifact

    def to_dict(self) -> dict[str, Any]:
        self._check_fitted()
        return {
            "rule": self.rule,
            "floor": self.floor,
            "cap": self.cap,
            "thresholds": {c: list(v) for c, v in self.thresholds.items()},
            "normal_calls": dict(self.normal_calls),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ProvenanceCue:
        cue = cls(rule=str(data["rule"]), floor=int(data["floor"]), cap=int(data["cap"]))
        cue.normal_calls = {str(k): int(v) for k, v in data.get("normal_calls", {}).items()}
        given = {str(k): (int(v[0]), int(v[1])) for k, v in data["thresholds"].items()}
        unknown = sorted(set(given) - set(SENDING_CLASSES))
        if unknown:
            raise ValueError(f"provenance: unknown egress class(es) {unknown}")
        if any(lon < 1 or tot < 1 for lon, tot in given.values()):
            raise ValueError("provenance: a threshold is below 1 byte")
        # classes missing from an older artifact are resolved as fit resolves them (borrow /
        # floor); those it holds are taken as saved
        cue.thresholds = {**cue._resolve(given), **given}
        return cue
