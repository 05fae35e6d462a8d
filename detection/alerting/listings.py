"""Rug-pull and listing-change alerts: watch every ``tools/list`` the collector stores.

A tool's description is an instruction to the model; a server that swaps it after the user
approved the tool (a *rug pull*) changes what the agent does without any call looking odd. The
instrumentation records each listed tool's digest (sha256 of name, description and input
schema; never the text), and :meth:`ListingWatcher.process` gets the ``tool_lists`` rows right
after they are durably written (the collector's ``on_listings`` hook). It raises, at once:

* ``changed_in_session``: a (server, tool) whose digest differs from the one the same session
  listed before (unless the new digest is the approved pin: an approved upgrade);
* ``changed_since_approval``: the digest differs from the (server, tool)'s pin
  (:mod:`toolwatch.detection.alerting.pins`);
* ``new_tool``: a tool without a pin on a server that has pins.

Each alert names the old and the new digest, never the text. A pin-related alert is raised once
per (server, tool, digest) — not again for every session that lists it — until an approval
changes the pins; approving the new digest (``toolwatch pins approve``) is what clears benign
churn such as a server upgrade. Alerts go to the ``listing_alerts`` table, the log (WARNING)
and the webhook. The watcher re-reads the pins when the ``tool_pins`` files change, and on start
it takes the last digest of every session listed in the last ``seed_hours`` from the store, so a
collector restart does not forget what a running session was shown.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, Final, cast

import pyarrow as pa

from toolwatch import tables
from toolwatch.collector.store.arrow_schema import SCHEMAS
from toolwatch.collector.store.parquet_store import Store
from toolwatch.detection.alerting.pins import PINS_TABLE, Pin, PinKey, load_pins, server_key
from toolwatch.detection.alerting.webhook import WebhookPoster
from toolwatch.words import counted, noun_for

log = logging.getLogger(__name__)

LISTING_ALERTS_TABLE: Final = tables.LISTING_ALERTS.name
LISTING_ALERTS_SCHEMA: Final = SCHEMAS[LISTING_ALERTS_TABLE]
CHANGED_IN_SESSION: Final = "changed_in_session"
CHANGED_SINCE_APPROVAL: Final = "changed_since_approval"
NEW_TOOL: Final = "new_tool"
KINDS: Final = (CHANGED_IN_SESSION, CHANGED_SINCE_APPROVAL, NEW_TOOL)
DEFAULT_MAX_SESSIONS: Final = 10_000
_FIELDS: Final = ("session_id", "server", "tool", "digest", "listed_time", "span_id", "service")


def describe(alert: dict[str, Any]) -> str:
    """One log line for a listing alert (short digests; the full ones are in the row)."""
    server = alert["server"] or "(unnamed server)"
    old = (alert["old_digest"] or "none")[:12]
    return (
        f"LISTING ALERT {alert['kind']} {server}/{alert['tool']}: digest {old} -> "
        f"{alert['new_digest'][:12]} (session {alert['session_id']})"
    )


class ListingWatcher:
    """Compare stored tools/list rows with the session's earlier listing and with the pins.

    ``store``: where pins are read and alerts written; ``webhook``/``poster``: where alerts
    are POSTed; ``max_sessions``: sessions whose last listing is remembered (least recently
    listed forgotten first); ``seed_hours``: how far back the store is read on start.
    """

    def __init__(
        self,
        store: Store,
        webhook: str | None = None,
        *,
        poster: WebhookPoster | None = None,
        max_sessions: int = DEFAULT_MAX_SESSIONS,
        seed_hours: float = 24.0,
        now: datetime | None = None,
    ) -> None:
        self.store = store
        self.poster = poster or (WebhookPoster(webhook) if webhook else None)
        self.max_sessions = max_sessions
        #: session -> (server, tool) -> the digest it listed last
        self._sessions: OrderedDict[str, dict[PinKey, str]] = OrderedDict()
        self._pins: dict[PinKey, Pin] = {}
        self._approved: set[str] = set()
        self._pins_seen: tuple[str, ...] | None = None
        #: (server, tool, digest) a pin-related alert was raised for (until the pins change)
        self._raised: set[tuple[str, str, str]] = set()
        self.alerts_raised = 0
        self.rows_seen = 0
        self._refresh_pins()
        self._seed((now or datetime.now(UTC)) - timedelta(hours=seed_hours))

    def process(self, table: pa.Table) -> list[dict[str, Any]]:
        """Check a stored batch of ``tool_lists`` rows; returns the alerts it raised."""
        if table.num_rows == 0:
            return []
        self._refresh_pins()
        missing = [c for c in ("tool", "digest", "listed_time") if c not in table.column_names]
        if missing:
            log.error(
                "listing watcher: batch lacks %s %s; %s",
                noun_for(len(missing), "column"),
                missing,
                counted(len(table), "row"),
            )
            return []
        cols = {
            c: table.column(c).to_pylist() if c in table.column_names else [None] * len(table)
            for c in _FIELDS
        }
        rows = [{c: cols[c][i] for c in _FIELDS} for i in range(table.num_rows)]
        rows.sort(key=lambda r: cast(datetime, r["listed_time"]))
        now = datetime.now(UTC)
        alerts: list[dict[str, Any]] = []
        for row in rows:
            self.rows_seen += 1
            alerts.extend(self._check(row, now))
        if alerts:
            self._record(alerts)
        return alerts

    @property
    def pins(self) -> dict[PinKey, Pin]:
        """The pins in force (as last read)."""
        return dict(self._pins)

    def close(self) -> None:
        if self.poster is not None:
            self.poster.close()

    # ------------------------------------------------------------------ checks

    def _check(self, row: dict[str, Any], now: datetime) -> list[dict[str, Any]]:
        key: PinKey = (server_key(row["server"]), row["tool"])
        digest = row["digest"]
        out = []
        session = row["session_id"] or ""
        seen = self._session(session)
        before = seen.get(key)
        seen[key] = digest
        pin = self._pins.get(key)
        if before is not None and before != digest and (pin is None or pin.digest != digest):
            # one alert per event: the pin-related one would report the same change
            self._raised.add((key[0], key[1], digest))
            return [self._alert(CHANGED_IN_SESSION, row, before, now)]
        if pin is not None and pin.digest != digest and self._first_time(key, digest):
            out.append(self._alert(CHANGED_SINCE_APPROVAL, row, pin.digest, now))
        elif pin is None and key[0] in self._approved and self._first_time(key, digest):
            out.append(self._alert(NEW_TOOL, row, None, now))
        return out

    def _first_time(self, key: PinKey, digest: str) -> bool:
        mark = (key[0], key[1], digest)
        if mark in self._raised:
            return False
        self._raised.add(mark)
        return True

    def _session(self, session: str) -> dict[PinKey, str]:
        seen = self._sessions.get(session)
        if seen is None:
            seen = self._sessions[session] = {}
            if len(self._sessions) > self.max_sessions:
                self._sessions.popitem(last=False)
        else:
            self._sessions.move_to_end(session)
        return seen

    @staticmethod
    def _alert(kind: str, row: dict[str, Any], old: str | None, now: datetime) -> dict[str, Any]:
        return {
            "alert_time": now,
            "kind": kind,
            "server": row["server"],
            "tool": row["tool"],
            "old_digest": old,
            "new_digest": row["digest"],
            "session_id": row["session_id"],
            "listed_time": row["listed_time"],
            "span_id": row["span_id"],
            "service": row["service"],
        }

    # ------------------------------------------------------------------ state

    def _refresh_pins(self) -> None:
        """Re-read the pins when the tool_pins files changed (an approval since)."""
        files = tuple(str(p) for p in self.store.files(PINS_TABLE))
        if files == self._pins_seen:
            return
        self._pins_seen = files
        try:
            pins = load_pins(self.store)
        except Exception as exc:  # never break ingest over the pins
            log.error("listing watcher: cannot read the pins: %s", exc)
            return
        if pins != self._pins:
            self._raised.clear()  # a new approval: what is still unapproved is said again
        self._pins = pins
        self._approved = {server for server, _ in pins}

    def _seed(self, since: datetime) -> None:
        """The last digest of every session listed since ``since``, and the pin alerts raised
        already (so a restart neither forgets a session nor repeats an alert)."""
        try:
            if self.store.files(tables.TOOL_LISTS.name):
                rows = self.store.query(
                    "SELECT session_id, coalesce(server, '') AS server, tool, "
                    "arg_max(digest, listed_time) AS digest, max(listed_time) AS last "
                    "FROM tool_lists WHERE listed_time >= $1 GROUP BY ALL ORDER BY last",
                    [since],
                ).to_pylist()
                for r in rows:
                    self._session(r["session_id"] or "")[(r["server"], r["tool"])] = r["digest"]
            if self.store.files(LISTING_ALERTS_TABLE):
                for r in self.store.query(
                    "SELECT DISTINCT coalesce(server, '') AS server, tool, new_digest "
                    f"FROM {LISTING_ALERTS_TABLE} WHERE kind != '{CHANGED_IN_SESSION}'"
                ).to_pylist():
                    self._raised.add((r["server"], r["tool"], r["new_digest"]))
        except Exception as exc:
            log.error("listing watcher: cannot read the store's listings on start: %s", exc)

    def _record(self, alerts: Sequence[dict[str, Any]]) -> None:
        self.alerts_raised += len(alerts)
        for alert in alerts:
            log.warning(describe(alert))
        try:
            self.store.append(LISTING_ALERTS_TABLE, list(alerts))
        except Exception as exc:  # never break ingest over an alert write
            log.error("could not store %s: %s", counted(len(alerts), "listing alert"), exc)
        if self.poster is not None:
            self.poster.post(list(alerts))
