"""Approved tool digests ("pins"): the listings a user has looked at and accepted.

A pin is the latest row of the ``tool_pins`` table for a ``(server, tool)`` pair; approving
appends rows, so the history of approvals stays in the store. A server with at least one pin is
*approved*: a tool it lists without a pin is a new tool. The listing watcher
(:mod:`toolwatch.detection.alerting.listings`) compares every ``tools/list`` it sees with the
pins; ``toolwatch pins`` lists, approves and exports them. A server upgrade that changes
descriptions raises alerts until its new digests are approved — approval is what tells benign
churn from a rug pull.

Servers are keyed by name; a listing whose server had no name is keyed by ``""``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from toolwatch import tables
from toolwatch.documents import loads_json

if TYPE_CHECKING:  # pins are read from a store the caller opened: `pins --help` needs no DuckDB
    from toolwatch.collector.store.parquet_store import Store

PINS_TABLE: Final = tables.TOOL_PINS.name
EXPORT_FORMAT: Final = "toolwatch-pins/1"
ORIGIN_LISTING: Final = "listing"
ORIGIN_FILE: Final = "file"
#: An approval that names nothing (the pins command refuses it as bad usage, exit 2).
NOTHING_NAMED: Final = "say what to approve: --server, --tool, --all or --from FILE"
_DIGEST_CHARS: Final = frozenset("0123456789abcdef")

#: (server, tool): server "" when the listing named none
PinKey = tuple[str, str]


class PinsError(ValueError):
    """A pins file or selection cannot be used; the message says why."""


@dataclass(frozen=True, slots=True)
class Pin:
    server: str
    tool: str
    digest: str
    approved_time: datetime

    @property
    def key(self) -> PinKey:
        return (self.server, self.tool)


@dataclass(frozen=True, slots=True)
class Listed:
    """The latest digest a store has seen for a (server, tool), and when."""

    server: str
    tool: str
    digest: str
    listed_time: datetime
    sessions: int


def server_key(server: str | None) -> str:
    return server or ""


def load_pins(store: Store) -> dict[PinKey, Pin]:
    """The pins in force: the latest approval of every (server, tool)."""
    if not store.files(PINS_TABLE):
        return {}
    rows = store.query(
        f"SELECT server, tool, arg_max(digest, approved_time) AS digest, "
        f"max(approved_time) AS approved_time FROM {PINS_TABLE} GROUP BY server, tool"
    ).to_pylist()
    return {
        (r["server"], r["tool"]): Pin(r["server"], r["tool"], r["digest"], r["approved_time"])
        for r in rows
    }


def latest_listings(store: Store) -> dict[PinKey, Listed]:
    """The latest digest of every (server, tool) in ``tool_lists``."""
    if not store.files(tables.TOOL_LISTS.name):
        return {}
    rows = store.query(
        "SELECT coalesce(server, '') AS server, tool, arg_max(digest, listed_time) AS digest, "
        "max(listed_time) AS listed_time, count(DISTINCT session_id) AS sessions "
        "FROM tool_lists GROUP BY ALL"
    ).to_pylist()
    return {
        (r["server"], r["tool"]): Listed(
            r["server"], r["tool"], r["digest"], r["listed_time"], int(r["sessions"])
        )
        for r in rows
    }


def status(pin: Pin | None, listed: Listed | None, approved_servers: set[str]) -> str:
    """How a (server, tool) stands: ``approved`` (its latest listing is the pin), ``changed``
    (listed with another digest), ``new`` (not pinned on an approved server), ``unpinned``
    (its server has no pin), ``not listed`` (pinned, never seen in this store)."""
    if pin is not None:
        if listed is None:
            return "not listed"
        return "approved" if listed.digest == pin.digest else "changed"
    assert listed is not None
    return "new" if listed.server in approved_servers else "unpinned"


def select(
    listed: Mapping[PinKey, Listed], servers: Iterable[str], tools: Iterable[str], every: bool
) -> list[Listed]:
    """The listings an approval names: every one, or those of the given servers and/or
    tools (both given: a tool of one of those servers). PinsError if the selection is empty."""
    servers, tools = set(servers), set(tools)
    if not (every or servers or tools):
        raise PinsError(NOTHING_NAMED)
    chosen = [
        item
        for key, item in sorted(listed.items())
        if every or ((not servers or key[0] in servers) and (not tools or key[1] in tools))
    ]
    if not chosen:
        what = ", ".join(sorted(servers) + sorted(tools)) or "anything"
        raise PinsError(f"no listed tool matches {what} (see `toolwatch pins list`)")
    return chosen


def approve(
    store: Store, items: Iterable[tuple[str, str, str]], origin: str, now: datetime | None = None
) -> list[dict[str, Any]]:
    """Append one pin row per (server, tool, digest); returns the rows written."""
    when = now or datetime.now(UTC)
    rows = [
        {"approved_time": when, "server": s, "tool": t, "digest": d, "origin": origin}
        for s, t, d in items
    ]
    if rows:
        store.append(PINS_TABLE, rows)
    return rows


def export_pins(pins: Mapping[PinKey, Pin]) -> dict[str, Any]:
    """The pins as a JSON document (another store can approve from it)."""
    return {
        "format": EXPORT_FORMAT,
        "pins": [
            {
                "server": p.server,
                "tool": p.tool,
                "digest": p.digest,
                "approved_time": p.approved_time.isoformat(),
            }
            for _, p in sorted(pins.items())
        ],
    }


def read_export(path: Path) -> list[tuple[str, str, str]]:
    """(server, tool, digest) of every pin in an exported file; PinsError naming the problem."""
    try:
        doc = loads_json(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise PinsError(f"cannot read {path}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise PinsError(f"{path} is not JSON: {exc}") from None
    if not isinstance(doc, dict) or doc.get("format") != EXPORT_FORMAT:
        raise PinsError(f"{path} is not a {EXPORT_FORMAT} export (`toolwatch pins export`)")
    items = doc.get("pins")
    if not isinstance(items, list):
        raise PinsError(f"{path}: 'pins' must be a list")
    out = []
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            raise PinsError(f"{path}: pin {i} is not an object")
        server, tool, digest = item.get("server"), item.get("tool"), item.get("digest")
        if not isinstance(server, str) or not isinstance(tool, str) or not tool:
            raise PinsError(f"{path}: pin {i} needs a string server and a non-empty tool")
        if not isinstance(digest, str) or len(digest) != 64 or set(digest) - _DIGEST_CHARS:
            raise PinsError(f"{path}: pin {i} ({server}/{tool}) has no sha256 hex digest")
        out.append((server, tool, digest))
    return out
