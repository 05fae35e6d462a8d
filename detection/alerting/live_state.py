"""Where the live scorer's state lives on disk and how it is written, read and set aside.

Frozen or adaptive, the scorer's state — its open streams (context, session bigrams, detector
sums, which watched statistics each is above, the novelty watch's), adaptive the statistics,
pools and pending streams, and how far it got (:class:`~.readback.ScoredWindow`) — is saved as
JSON to ``STORE/models/live-state.json`` every ``save_every_s``, right after a batch that
crossed a threshold and at close, and restored at start (:class:`~.live.LiveScorer`, which
composes the document). Written durably (temp file, fsync, rename, directory fsync: a power cut
leaves the old state or the new, never an empty file). A file that cannot be used — damaged,
another model's or the other mode's — is set aside as ``.unusable`` with one warning saying
why, and the scorer starts afresh: it never stops the collector.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any, Final

from toolwatch.collector.store.durable import write_text_durably
from toolwatch.detection.model.location import MODEL_IN_STORE
from toolwatch.documents import loads_json

log = logging.getLogger(__name__)

#: Where a store keeps the live scorer's state (beside its model).
STATE_IN_STORE: Final = MODEL_IN_STORE.parent / "live-state.json"


def write_state(path: Path, doc: dict[str, Any]) -> None:
    """Write a state document durably (OSError, ValueError, TypeError on failure)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_durably(path, json.dumps(doc, separators=(",", ":")))


def read_state(path: Path) -> Any:
    """The saved document, as parsed (OSError/ValueError when unreadable)."""
    return loads_json(path.read_text(encoding="utf-8"))


def set_aside(path: Path, why: Exception) -> None:
    """Move an unusable state out of the way (``.unusable``) and say so in one warning."""
    aside = path.with_name(path.name + ".unusable")
    try:
        path.replace(aside)
    except OSError as err:
        aside_note = f"could not set it aside: {err.strerror or err}"
    else:
        aside_note = f"set aside as {aside.name}"
    log.warning(
        "live scoring: starting afresh, the saved state %s is unusable (%s): %s",
        path,
        aside_note,
        why,
    )
