"""Argument provenance, measured where the content is and exported as numbers only.

A content-free call record cannot tell an exfiltrating call from a normal one: a 40-byte key
sits inside one tool's normal size range. What separates them is *where the argument bytes came
from*. The agent's own process holds the content, so the measurement happens there (and in the
transcript importer, which reads the content locally): per stream, a bounded window of recent
tool results; per call, how many bytes of its arguments reproduce them — after decoding
URL-encoding, base64, hex and JSON/HTML escapes — and whether the call sends data off the
machine (its egress class).

Only :meth:`Provenance.exported` leaves: byte counts, the source tool's name, the encoding and
egress enums. Bytes, fingerprints, hashes and offsets stay inside :class:`StreamProvenance`
(short-content hashes could be reversed by dictionary). Standard library only, so it runs in the
production install and anywhere else.

Modules: :mod:`.config` (parameters, the exported numbers), :mod:`.text` (what is compared),
:mod:`.views` (decodings), :mod:`.window` (retained bytes + shingle index), :mod:`.egress` and
:mod:`.shell` (what leaves the machine), :mod:`.measure` (one stream), :mod:`.tracker` (many).
"""

from toolwatch.instrumentation.provenance.config import (
    COMPACT_CONFIG,
    DEFAULT_CONFIG,
    EXPORTED_FIELDS,
    Provenance,
    ProvenanceConfig,
)
from toolwatch.instrumentation.provenance.measure import StreamProvenance
from toolwatch.instrumentation.provenance.text import result_text
from toolwatch.instrumentation.provenance.tracker import (
    DEFAULT_MAX_STREAMS,
    ProvenanceTracker,
    StreamKey,
    TrackerStats,
)

__all__ = [
    "COMPACT_CONFIG",
    "DEFAULT_CONFIG",
    "DEFAULT_MAX_STREAMS",
    "EXPORTED_FIELDS",
    "Provenance",
    "ProvenanceConfig",
    "ProvenanceTracker",
    "StreamKey",
    "StreamProvenance",
    "TrackerStats",
    "result_text",
]
