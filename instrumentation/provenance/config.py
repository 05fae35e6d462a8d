"""The parameters of a stream's provenance window and the numbers one check exports.

Defaults come from the measurements on dev-real (``docs/ARCHITECTURE.md``, *Argument
provenance*): 16-byte shingles, every 8th indexed (any common run of 23 bytes or more is always
found), a 1 MiB window of recent result bytes, a 2 × 2^19-slot offset table. Memory is allocated
once per stream and bounded by :attr:`ProvenanceConfig.memory_bound`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from toolwatch.conventions import DEST_SEEN_VALUES, EGRESS_CLASSES, ENCODINGS

SELECTIONS: Final = ("stride", "winnow")


@dataclass(frozen=True, slots=True)
class ProvenanceConfig:
    """How one stream's window is built and searched (every field is a named option)."""

    #: shingle bytes: the shortest run that counts (shorter runs such as ``/home/user/`` are
    #: common and meaningless; a key is longer)
    k: int = 16
    #: index every ``w``-th shingle of a result: runs of ``w + k - 1`` bytes are always found
    w: int = 8
    #: ``stride`` (every w-th shingle; the query probes every shingle, so MOSS's guarantee
    #: holds without hashing every result byte) or ``winnow`` (MOSS, Schleimer et al. 2003:
    #: content-defined, measured 20x slower to ingest and no more accurate here)
    selection: str = "stride"
    #: result bytes searched; the buffer holds between 1 and 1.5 times this
    window_bytes: int = 1 << 20
    #: 2**table_bits slots of 4 bytes (per way) map a shingle to its newest offset
    table_bits: int = 19
    #: 2: a slot also keeps the entry it displaced (the older occurrence of a repeated shingle)
    ways: int = 2
    #: head of one result that is kept (one huge result cannot flush the window)
    max_result_bytes: int = 256 << 10
    #: results kept at most (bounds the segment arrays)
    max_segments: int = 8192
    #: argument bytes checked per call; the rest is counted as unchecked
    max_argument_bytes: int = 1 << 20
    #: drop Claude Code Read's ``cat -n`` prefixes (``     1→``) at ingest, so a copied file
    #: matches as one run rather than line by line
    strip_line_numbers: bool = True
    #: hits inside a run already found are still extended on a new alignment at most this many
    #: times per view: recovers the longest occurrence of repeated text at a bounded cost
    realign_budget: int = 64
    #: payload runs need this many distinct byte values (drops rules, indentation, padding)
    min_distinct_bytes: int = 8
    #: measure ``reused_*`` on calls that send nothing off the machine too (the importer does;
    #: the live instrumentation checks egress calls only, the ones the provenance cue reads)
    check_non_egress: bool = True

    def __post_init__(self) -> None:
        problems = []
        if self.k < 4 or self.w < 1:
            problems.append(f"k must be >= 4 and w >= 1 (got k={self.k}, w={self.w})")
        if self.selection not in SELECTIONS:
            problems.append(f"selection must be one of {', '.join(SELECTIONS)}")
        if not 10 <= self.table_bits <= 28:
            problems.append(f"table_bits must be within 10..28 (got {self.table_bits})")
        if self.ways not in (1, 2):
            problems.append(f"ways must be 1 or 2 (got {self.ways})")
        if not self.k <= self.max_result_bytes <= self.window_bytes:
            problems.append("max_result_bytes must be within k..window_bytes")
        if self.max_segments < 1 or self.max_argument_bytes < 0 or self.realign_budget < 0:
            problems.append("max_segments, max_argument_bytes, realign_budget must be >= 0")
        if problems:
            raise ValueError("provenance config: " + "; ".join(problems))

    @property
    def guaranteed_match(self) -> int:
        """Common runs at least this long are always found (unless a slot was overwritten)."""
        return self.w + self.k - 1

    @property
    def buffer_bytes(self) -> int:
        """The retained-bytes buffer, allocated once: 1.5 × the window."""
        return self.window_bytes + self.window_bytes // 2

    @property
    def memory_bound(self) -> int:
        """Upper bound of one stream's memory in bytes: buffer, table, segment arrays (with
        array growth), the 64 KiB chunk moved when the buffer is compacted, and the
        per-stream held results of one model response (:attr:`held_bytes`). Python object
        headers (< 2 KiB) aside."""
        table = 4 * self.ways * (1 << self.table_bits)
        segments = 10 * self.max_segments * 9 // 8
        return self.buffer_bytes + table + segments + (1 << 16) + self.held_bytes

    @property
    def held_bytes(self) -> int:
        """Result bytes the live tracker may hold back per stream until the model response
        that produced them is over (its calls cannot have seen them): one result's worth."""
        return self.max_result_bytes


#: The measured default (``memory_bound`` ≈ 5.9 MiB per stream).
DEFAULT_CONFIG: Final = ProvenanceConfig()
#: A quarter of the memory (≈ 1.6 MiB per stream) for processes that hold many conversations;
#: on dev-real it found 99.8 % of the runs of 31 bytes or more that the default finds.
COMPACT_CONFIG: Final = ProvenanceConfig(
    window_bytes=256 << 10, table_bits=17, max_result_bytes=64 << 10
)


@dataclass(frozen=True, slots=True)
class Provenance:
    """One call's provenance: numbers and closed-set names, nothing else.

    ``reused_*`` look at every string argument; ``payload_*`` only at the parts that leave the
    machine, counting runs from local tools' results outside copied links. ``None`` means not
    measured (a non-egress call when ``check_non_egress`` is off).
    """

    egress: str
    reused_longest: int | None
    reused_total: int | None
    payload_longest: int
    payload_total: int
    dest_seen: str
    source_tool: str | None
    encoding: str
    #: result bytes received after the longest run's source (0 if nothing reused); diagnostic,
    #: not exported
    source_age_bytes: int
    checked_bytes: int
    unchecked_bytes: int

    def __post_init__(self) -> None:
        assert self.egress in EGRESS_CLASSES, self.egress
        assert self.encoding in ENCODINGS, self.encoding
        assert self.dest_seen in DEST_SEEN_VALUES, self.dest_seen

    @property
    def measured(self) -> bool:
        return self.reused_longest is not None

    def exported(self) -> dict[str, Any]:
        """What may leave the process, by call-record field (``record.CallRecord``): the span
        attributes and the imported columns are both derived from this one list. A call
        that was not measured exports its egress class only (the rest is null)."""
        if not self.measured:
            return {name: self.egress if name == "egress" else None for name in EXPORTED_FIELDS}
        return {
            "egress": self.egress,
            "reused_longest": self.reused_longest,
            "reused_total": self.reused_total,
            "payload_longest": self.payload_longest,
            "payload_total": self.payload_total,
            "source_tool": self.source_tool,
            "reused_encoding": self.encoding,
            "dest_seen": self.dest_seen,
            "unchecked_bytes": self.unchecked_bytes,
        }


#: The call-record fields a :class:`Provenance` fills (all nullable in the record).
EXPORTED_FIELDS: Final[tuple[str, ...]] = (
    "egress",
    "reused_longest",
    "reused_total",
    "payload_longest",
    "payload_total",
    "source_tool",
    "reused_encoding",
    "dest_seen",
    "unchecked_bytes",
)
