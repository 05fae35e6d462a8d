"""The contract every cue follows (one small unit per file, river-style).

A **cue** turns one tool call into a non-negative *surprise* score. It is fitted once on the
training calls, then scores calls two ways that must agree exactly:

* ``score_many(frame)`` — all calls of a :class:`~toolwatch.detection.calls.frame.CallFrame` at
  once (numpy; used for the training statistics, calibration and batch scoring);
* ``score_one(call, ctx, state)`` — one call of a live stream (used by the online scorer); it
  scores the call *given the stream so far*, then folds the call into the cue's per-stream
  ``state`` (from ``new_state()``; ``None`` for cues without one).

Both paths compute every float with the same operations in the same order (``math.log`` on both
sides, never ``numpy.log``), which is why online and batch scores are bit-identical.

What a *stream* is: the calls of one ``(session_id, agent_id)`` pair, ordered by ``(start_time,
seq)``. A subagent is its own stream because its calls interleave with the parent's in time but
follow their own plan; every cue state and detector state is per stream and starts afresh with the
stream.
"""

from __future__ import annotations

import abc
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, ClassVar, Final

import numpy as np

if TYPE_CHECKING:
    from toolwatch.detection.calls.frame import CallFrame

_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)
_US: Final = timedelta(microseconds=1)


def to_microseconds(value: datetime | int) -> int:
    """Microseconds since the epoch of a call time (naive datetimes are taken as UTC)."""
    if isinstance(value, datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=UTC)
        return (value - _EPOCH) // _US
    if isinstance(value, (int, np.integer)):
        return int(value)
    raise TypeError(f"start_time must be a datetime or integer microseconds, not {value!r}")


@dataclass(slots=True)
class Call:
    """The fields of one call record the cues read (content-free, like the record itself)."""

    session_id: str
    agent_id: str | None
    seq: int | None
    tool: str
    start_us: int
    input_bytes: int | None  # None: the span carried no size (semantic-conventions only)
    output_bytes: int | None
    failed: bool
    response_id: str | None
    restamped: bool = False
    output_truncated: bool = False
    #: argument provenance (None = not measured), read by the provenance cue
    egress: str | None = None
    payload_longest: int | None = None
    payload_total: int | None = None

    @classmethod
    def from_mapping(cls, row: Mapping[str, Any]) -> Call:
        """Read a call from a record dict (``CallRecord.as_dict()`` or an Arrow row).

        Raises ``ValueError`` naming the field when a required one is missing or invalid.
        """
        try:
            session_id = row["session_id"]
            tool = row["tool"]
            start = row["start_time"]
            input_bytes = row["input_bytes"]
            failed = row["failed"]
        except KeyError as exc:
            raise ValueError(f"call record lacks the field {exc.args[0]!r}") from None
        if session_id is None or tool is None or start is None:
            missing = [
                k
                for k, v in (("session_id", session_id), ("tool", tool), ("start_time", start))
                if v is None
            ]
            raise ValueError(f"call record has no value for {', '.join(missing)}")
        if input_bytes is not None and input_bytes < 0:
            raise ValueError(f"call record has negative input_bytes ({input_bytes})")
        output_bytes = row.get("output_bytes")
        if output_bytes is not None and output_bytes < 0:
            raise ValueError(f"call record has negative output_bytes ({output_bytes})")
        return cls(
            session_id=str(session_id),
            agent_id=row.get("agent_id"),
            seq=row.get("seq"),
            tool=str(tool),
            start_us=to_microseconds(start),
            input_bytes=None if input_bytes is None else int(input_bytes),
            output_bytes=None if output_bytes is None else int(output_bytes),
            failed=bool(failed),
            response_id=row.get("response_id"),
            restamped=bool(row.get("restamped") or False),
            output_truncated=bool(row.get("output_truncated") or False),
            egress=row.get("egress"),
            payload_longest=_optional_int(row.get("payload_longest")),
            payload_total=_optional_int(row.get("payload_total")),
        )


def _optional_int(value: Any) -> int | None:
    return None if value is None else int(value)


class StreamContext:
    """What a stream remembers about its previous call; shared by the cues.

    ``index`` is the 0-based position of the call being scored; ``prev_start_us`` etc. are
    ``None``/``False`` before the stream's first call.
    """

    __slots__ = ("index", "prev_response", "prev_restamped", "prev_start_us")

    def __init__(self) -> None:
        self.index = 0
        self.prev_start_us: int | None = None
        self.prev_response: str | None = None
        self.prev_restamped = False

    def advance(self, call: Call) -> None:
        """Make ``call`` the previous call of the stream."""
        self.index += 1
        self.prev_start_us = call.start_us
        self.prev_response = call.response_id
        self.prev_restamped = call.restamped

    def to_json(self) -> list[Any]:
        return [self.index, self.prev_start_us, self.prev_response, self.prev_restamped]

    @classmethod
    def from_json(cls, data: Any) -> StreamContext:
        ctx = cls()
        ctx.index = int(data[0])
        ctx.prev_start_us = None if data[1] is None else int(data[1])
        ctx.prev_response = None if data[2] is None else str(data[2])
        ctx.prev_restamped = bool(data[3])
        return ctx


class NotFittedError(RuntimeError):
    """A cue was asked to score before it was fitted or loaded."""


class Cue(abc.ABC):
    """A fitted per-call surprise score (see the module docstring for the two paths)."""

    name: ClassVar[str]

    @abc.abstractmethod
    def fit(self, frame: CallFrame) -> Cue:
        """Learn the cue's parameters from training calls; returns ``self``."""

    @abc.abstractmethod
    def score_many(self, frame: CallFrame) -> np.ndarray:
        """Scores of every call of ``frame`` (float64, frame order)."""

    def new_state(self) -> Any:
        """Fresh per-stream state for :meth:`score_one` (``None``: the cue keeps none)."""
        return None

    @abc.abstractmethod
    def score_one(self, call: Call, ctx: StreamContext, state: Any) -> float:
        """Score of ``call`` given its stream so far; then fold ``call`` into ``state``."""

    def state_to_json(self, state: Any) -> Any:
        """A per-stream state as JSON (saved so a restarted live scorer resumes the stream)."""
        return None

    def state_from_json(self, data: Any) -> Any:
        """Inverse of :meth:`state_to_json`."""
        return self.new_state()

    @abc.abstractmethod
    def to_dict(self) -> dict[str, Any]:
        """JSON-ready parameters (numbers, strings, lists; no pickle)."""

    @classmethod
    @abc.abstractmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Cue:
        """Inverse of :meth:`to_dict`; raises ``ValueError``/``KeyError`` on bad input."""

    @property
    @abc.abstractmethod
    def fitted(self) -> bool:
        """Whether the cue has parameters."""

    def _check_fitted(self) -> None:
        if not self.fitted:
            raise NotFittedError(f"the {self.name} cue is not fitted (call fit or load a model)")
