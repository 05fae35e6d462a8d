"""How a source delivers its call records: into the store, only the calls it does not hold yet,
or to any OTLP/HTTP collector as spans with their original times.

Every source (the Claude Code importer, the simulator) delivers through these functions, so
"running it twice adds nothing" and "re-sent as OTLP" mean the same for all of them. A call's
identity is its ``call_id``, whatever its source.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final, Literal, TypeAlias

import pyarrow as pa
import pyarrow.compute as pc

from toolwatch.collector.store import CALLS_SCHEMA, Store
from toolwatch.collector.store.parquet_store import CALLS
from toolwatch.record import CALL_FIELD_NAMES, CallRecord
from toolwatch.words import counted

#: What a source hands over: a table of the calls schema, or call records.
Calls: TypeAlias = pa.Table | Sequence[CallRecord]


class DeliveryError(RuntimeError):
    """Calls could not be sent as OTLP; what was written to the store before stands."""


#: What the OTLP replay imports beyond toolwatch: the base install brings it.
EXPORTER: Final = "opentelemetry-exporter-otlp-proto-http"


class ExportUnavailable(DeliveryError):
    """The OTLP replay (:mod:`toolwatch.instrumentation.export.replay`) cannot be imported: a
    part of the install is missing, said with what to install (not a command-line mistake)."""

    def __init__(self, reason: str) -> None:
        super().__init__(
            "OTLP export is unavailable: toolwatch.instrumentation.export.replay cannot be "
            f"imported ({reason}); it needs {EXPORTER!r} of the base install (pip install "
            "toolwatch)"
        )
        self.reason = reason


def require_export() -> None:
    """Raise :class:`ExportUnavailable` unless the OTLP replay imports, so a command sending
    calls can say so before it generates or reads them."""
    try:
        import toolwatch.instrumentation.export.replay  # noqa: F401
    except ImportError as exc:
        raise ExportUnavailable(str(exc)) from exc


class ExportFailed(DeliveryError):
    """The endpoint refused a batch or could not be reached after ``sent`` spans went."""

    def __init__(self, endpoint: str, sent: int, cause: Exception) -> None:
        super().__init__(f"OTLP export to {endpoint} failed: {cause}")
        self.endpoint, self.sent, self.cause = endpoint, sent, cause


@dataclass(slots=True)
class Appended:
    """What :func:`append_new_calls` did: the calls it wrote and how many were there already."""

    calls: pa.Table
    already_stored: int
    files: list[Path] = field(default_factory=list)


def records_table(records: Calls) -> pa.Table:
    """Records as an Arrow table of the calls schema (column-wise: no per-row dicts).

    ``pa.array`` makes pyarrow import pandas once per process (~0.4 s CPU); building the
    buffers by hand instead was measured slower end to end, so this stays.
    """
    if isinstance(records, pa.Table):
        return records
    columns = {name: [getattr(r, name) for r in records] for name in CALL_FIELD_NAMES}
    return pa.Table.from_pydict(columns, schema=CALLS_SCHEMA)


#: What a re-run is recognised by: a call's own id, or, for copies made from stored calls (the
#: experiment's injected sessions, whose calls keep the originals' call ids), the session id.
DedupKey = Literal["call_id", "session_id"]


def stored_values(store: Store, key: DedupKey, values: Sequence[str | None]) -> set[str]:
    """Which of ``values`` of the column ``key`` the store's ``calls`` table holds already."""
    wanted = [v for v in values if v is not None]
    if not wanted:
        return set()
    # list parameters + unnest: registering an Arrow table would import pandas (~1 s)
    found = store.query(
        f"SELECT DISTINCT {key} FROM calls WHERE {key} IN (SELECT unnest($ids::VARCHAR[]))",
        {"ids": wanted},
    )
    return set(found.column(key).to_pylist()) if found.num_rows else set()


def stored_call_ids(store: Store, call_ids: Sequence[str | None]) -> set[str]:
    """Which of ``call_ids`` the store's ``calls`` table holds already."""
    return stored_values(store, "call_id", call_ids)


def not_stored(store: Store, calls: Calls, key: DedupKey = "call_id") -> pa.Table:
    """The calls whose ``key`` the store does not hold yet (all of them when none is)."""
    table = records_table(calls)
    if table.num_rows == 0:
        return table
    stored = stored_values(store, key, table.column(key).to_pylist())
    if not stored:
        return table
    known = pa.array(sorted(stored), pa.string())
    return table.filter(pc.invert(pc.is_in(table.column(key), known)))


def append_new_calls(store: Store, calls: Calls, key: DedupKey = "call_id") -> Appended:
    """Append to ``calls`` the calls whose ``key`` the store does not hold yet, durably; a
    re-run adds nothing."""
    table = records_table(calls)
    fresh = not_stored(store, table, key)
    files = store.append(CALLS, fresh) if fresh.num_rows else []
    return Appended(calls=fresh, already_stored=table.num_rows - fresh.num_rows, files=files)


@dataclass(slots=True)
class OtlpSent:
    """What an OTLP send delivered: spans sent, and accepted (not rejected) by the endpoint."""

    sent: int
    accepted: int
    messages: list[str] = field(default_factory=list)  # the endpoint's rejection messages

    def check(self) -> str | None:
        """None when every span sent was accepted, else one line saying what was not."""
        if self.accepted == self.sent:
            return None
        why = "; ".join(self.messages) or "no reason given"
        return (
            f"only {self.accepted:,} of {counted(self.sent, 'span')} were accepted by the "
            "collector "
            f"({self.sent - self.accepted:,} rejected: {why})"
        )


def send_otlp(calls: Calls, endpoint: str, *, progress: bool = False) -> int:
    """Send calls as OTLP spans with their original times (through the instrumentation's
    replay); returns how many the endpoint accepted (see :func:`send_otlp_report`)."""
    return send_otlp_report(calls, endpoint, progress=progress).accepted


def send_otlp_report(calls: Calls, endpoint: str, *, progress: bool = False) -> OtlpSent:
    """Send calls as OTLP spans with their original times; what was sent and accepted.

    ``progress`` shows a bar on stderr. Raises :class:`ExportUnavailable` when the replay
    cannot be imported, :class:`ExportFailed` (with the count sent) when the endpoint refuses a
    batch or cannot be reached.
    """
    require_export()
    from toolwatch.instrumentation.export.replay import replay_records

    records = calls.to_pylist() if isinstance(calls, pa.Table) else list(calls)
    if not records:
        return OtlpSent(0, 0)
    from tqdm import tqdm

    with tqdm(
        total=len(records), unit="span", desc="OTLP", file=sys.stderr, disable=not progress
    ) as bar:
        sent = 0

        def on_progress(accepted: int) -> None:
            nonlocal sent
            sent = accepted
            bar.update(accepted - bar.n)

        try:
            report = replay_records(records, endpoint, on_progress=on_progress)
        except Exception as exc:  # ReplayError, network and protocol errors of the exporter
            raise ExportFailed(endpoint, sent, exc) from exc
    return OtlpSent(report.sent, report.accepted, list(report.messages))
