"""Imported streams a store holds unflagged that today's importer would flag: forks of the main
thread (compaction, aside question, prompt suggestion, session memory) imported before their
``client_quirk`` values existed. The store is append-only and a re-import adds no call already
stored, so such streams stay unflagged (and are learned from as ordinary subagents) until the
transcripts are imported into a fresh store; ``toolwatch store info`` says so.

The agent-id patterns are the importer's own
(:data:`~toolwatch.collector.sources.claude_code.parsing.FORK_AGENTS`), run by DuckDB in one
grouped query over the rows with ``source = 'import'``, an agent id and no flag.

``store info`` also counts the imported calls without result (:func:`unanswered`): those stored
failed with ``error_type = "no_result"`` (their result line was cut off, or never written though
the stream went on) and those stored unfailed as pending, as the import summary did, so a store
read later says why those calls count as failures, or do not.
"""

from __future__ import annotations

from typing import Final

from toolwatch.collector.sources.claude_code.parsing import FORK_AGENTS
from toolwatch.collector.sources.claude_code.records import SOURCE
from toolwatch.collector.store import Store
from toolwatch.collector.store.parquet_store import CALLS
from toolwatch.conventions import ERROR_TYPE_NO_RESULT
from toolwatch.words import counted

#: What to do about them (the store keeps what it was given).
REMEDY: Final = (
    "imported before these forks were flagged; re-import the transcripts into a fresh store "
    "(toolwatch import claude-code PATH --store NEW) to flag them: a re-import into this store "
    "adds nothing"
)


def unflagged_forks(store: Store) -> dict[str, tuple[int, int]]:
    """Per fork quirk the importer would give today: (streams, calls) imported without a flag
    whose agent id matches its pattern; empty when there are none (or no calls table)."""
    if CALLS not in store.tables():
        return {}
    params: dict[str, str] = {"source": SOURCE}
    cases = []
    for i, (pattern, quirk) in enumerate(FORK_AGENTS):
        params[f"p{i}"], params[f"q{i}"] = pattern.pattern, quirk
        cases.append(f"WHEN regexp_matches(agent_id, $p{i}) THEN $q{i}")
    table = store.query(
        "SELECT quirk, count(*) AS streams, sum(calls) AS calls FROM ("
        f" SELECT CASE {' '.join(cases)} END AS quirk, session_id, agent_id, count(*) AS calls"
        f" FROM {CALLS} WHERE source = $source AND client_quirk IS NULL"
        " AND agent_id IS NOT NULL GROUP BY ALL"
        ") WHERE quirk IS NOT NULL GROUP BY quirk ORDER BY quirk",
        params,
    )
    return {row["quirk"]: (int(row["streams"]), int(row["calls"])) for row in table.to_pylist()}


def format_unflagged_forks(found: dict[str, tuple[int, int]]) -> list[str]:
    """``toolwatch store info``'s lines for :func:`unflagged_forks` (none when empty)."""
    if not found:
        return []
    streams = sum(s for s, _ in found.values())
    calls = sum(c for _, c in found.values())
    each = ", ".join(
        f"{q} {counted(s, 'stream')} / {counted(c, 'call')}" for q, (s, c) in found.items()
    )
    return [
        f"unflagged forks: {counted(streams, 'imported stream')} ({counted(calls, 'call')}) "
        f"look like client forks but carry no client_quirk ({each})",
        f"  {REMEDY}",
    ]


def unanswered(store: Store) -> tuple[int, int]:
    """Imported calls without result: (stored failed with ``error_type = "no_result"``,
    pending: stored unfailed with no size); (0, 0) without a calls table."""
    if CALLS not in store.tables():
        return 0, 0
    table = store.query(
        "SELECT count(*) FILTER (WHERE error_type = $type) AS lost,"
        " count(*) FILTER (WHERE NOT failed AND output_bytes IS NULL) AS pending"
        f" FROM {CALLS} WHERE source = $source",
        {"source": SOURCE, "type": ERROR_TYPE_NO_RESULT},
    )
    row = table.to_pylist()[0]
    return int(row["lost"] or 0), int(row["pending"] or 0)


def format_unanswered(lost: int, pending: int) -> list[str]:
    """``toolwatch store info``'s lines for :func:`unanswered` (none for a 0)."""
    lines = []
    if lost:
        lines.append(
            f"imported calls without result stored as failed: {lost:,}, error_type "
            f"{ERROR_TYPE_NO_RESULT} (the result cut off in a transcript's last line, or never "
            "written though the stream went on): no size, no duration"
        )
    if pending:
        lines.append(
            f"imported calls pending when imported: {pending:,} (no result yet in their "
            "stream's last response), stored unfailed: no size, no duration"
        )
    return lines
