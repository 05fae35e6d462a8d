"""Imported streams a store holds unflagged that today's importer would flag: forks of the main
thread (compaction, aside question, prompt suggestion, session memory) imported before their
``client_quirk`` values existed. The store is append-only and a re-import adds no call already
stored, so such streams stay unflagged (and are learned from as ordinary subagents) until the
transcripts are imported into a fresh store; ``toolwatch store info`` says so.

The agent-id patterns are the importer's own
(:data:`~toolwatch.collector.sources.claude_code.parsing.FORK_AGENTS`), run by DuckDB in one
grouped query over the rows with ``source = 'import'``, an agent id and no flag.

``store info`` also counts the imported calls stored failed with ``error_type = "no_result"``
(their result line was cut off: :func:`cut_results`), as the import summary did, so a store
read later says why those calls count as failures.
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


def cut_results(store: Store) -> int:
    """Imported calls stored failed with ``error_type = "no_result"`` (0 without a calls
    table)."""
    if CALLS not in store.tables():
        return 0
    table = store.query(
        f"SELECT count(*) AS n FROM {CALLS} WHERE source = $source AND error_type = $type",
        {"source": SOURCE, "type": ERROR_TYPE_NO_RESULT},
    )
    return int(table.column("n")[0].as_py() or 0)


def format_cut_results(n: int) -> list[str]:
    """``toolwatch store info``'s line for :func:`cut_results` (none when 0)."""
    if not n:
        return []
    return [
        f"imported calls whose result was cut off: {n:,} (a transcript's last line cut short), "
        f"stored as failed, error_type {ERROR_TYPE_NO_RESULT}: no size, no duration"
    ]
