"""Imported streams a store holds unflagged that today's importer would flag: forks of the main
thread (compaction, aside question, prompt suggestion, session memory) imported before their
``client_quirk`` values existed. The store is append-only and a re-import adds no call already
stored, so such streams stay unflagged (and are learned from as ordinary subagents) until the
transcripts are imported into a fresh store; ``toolwatch store info`` says so.

The agent-id patterns are the importer's own
(:data:`~toolwatch.collector.sources.claude_code.parsing.FORK_AGENTS`), run by DuckDB once per
imported stream with an agent id and no flag (:func:`imported_checks`: one grouped query).

``store info`` also counts, in the same query, the imported calls without result: those stored
failed with ``error_type = "no_result"`` (their result line was cut off, or never written though
the stream went on) and those stored unfailed as pending, as the import summary did, so a store
read later says why those calls count as failures, or do not. Calls imported before the
``no_result`` rule were all stored pending, those whose stream went on among them; which ones
those are is not told (a later response in words only is not in the store, and a join of the
pending calls to their streams' later calls took a second scan: 2× the time of ``store info``'s
checks on 1 M calls), so ``store info`` says what a re-import into a fresh store would change.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

from toolwatch.collector.sources.claude_code.parsing import FORK_AGENTS
from toolwatch.collector.sources.claude_code.records import SOURCE
from toolwatch.collector.store import Store
from toolwatch.collector.store.parquet_store import CALLS
from toolwatch.conventions import ERROR_TYPE_NO_RESULT
from toolwatch.words import counted

#: How to get today's importer's reading of calls the store keeps as it was given them.
REIMPORT: Final = (
    "re-import the transcripts into a fresh store (toolwatch import claude-code PATH --store NEW)"
)
#: What a re-import changes for pending calls (an importer from before the rule stored the
#: calls whose stream went on as pending too; the store cannot tell them apart).
PENDING_REMEDY: Final = (
    "if imported before calls whose stream went on were stored failed, some of these are such "
    f"calls: {REIMPORT} to store them failed ({ERROR_TYPE_NO_RESULT}) and keep only the calls "
    "of each stream's last response pending; a re-import into this store adds nothing"
)
#: What to do about unflagged forks.
REMEDY: Final = (
    f"imported before these forks were flagged; {REIMPORT} to flag them: a re-import into this "
    "store adds nothing"
)


@dataclass(frozen=True, slots=True)
class ImportedChecks:
    """What ``store info`` says of the imported calls, from one scan of them."""

    #: per fork quirk the importer would give today: (streams, calls) imported without a flag
    #: whose agent id matches its pattern
    forks: dict[str, tuple[int, int]] = field(default_factory=dict)
    #: calls stored failed with ``error_type = "no_result"`` (result cut off or never to come)
    lost: int = 0
    #: calls stored unfailed without result (pending when imported)
    pending: int = 0


def fork_cases(params: dict[str, str]) -> list[str]:
    """The importer's fork patterns as SQL ``WHEN`` clauses on ``agent_id`` (``CASE``'s
    branches, the quirk as value), their strings added to ``params`` as ``$p<i>``/``$q<i>``."""
    cases = []
    for i, (pattern, quirk) in enumerate(FORK_AGENTS):
        params[f"p{i}"], params[f"q{i}"] = pattern.pattern, quirk
        cases.append(f"WHEN regexp_matches(agent_id, $p{i}) THEN $q{i}")
    return cases


def imported_checks(store: Store) -> ImportedChecks:
    """One grouped DuckDB query over the imported calls (nothing without a calls table): per
    unflagged subagent stream its calls, and the calls without result; the fork patterns run
    once per stream, not once per call. One connection and one scan of seven columns: each
    check in a query of its own took a connection and a scan each, ≈ 2× the time on a store
    of 1 M calls (``benchmarks/bench_store_info.py``)."""
    if CALLS not in store.tables():
        return ImportedChecks()
    params: dict[str, str] = {"source": SOURCE, "type": ERROR_TYPE_NO_RESULT}
    cases = fork_cases(params)
    table = store.query(
        "SELECT quirk, count(*) AS streams, sum(calls) AS calls, sum(lost) AS lost,"
        " sum(pending) AS pending FROM ("
        f" SELECT CASE WHEN agent_id IS NOT NULL THEN CASE {' '.join(cases)} END END AS quirk,"
        " calls, lost, pending FROM ("
        # flagged rows and the main threads fall into one group (null ids): no hashing of
        # every session id, and the patterns then run once per unflagged stream
        "  SELECT CASE WHEN client_quirk IS NULL AND agent_id IS NOT NULL THEN session_id END"
        "  AS session_id, CASE WHEN client_quirk IS NULL THEN agent_id END AS agent_id,"
        "  count(*) AS calls,"
        "  count(*) FILTER (WHERE error_type = $type) AS lost,"
        "  count(*) FILTER (WHERE NOT failed AND output_bytes IS NULL) AS pending"
        f"  FROM {CALLS} WHERE source = $source GROUP BY ALL"
        " )) GROUP BY quirk ORDER BY quirk",
        params,
    )
    rows = table.to_pylist()
    return ImportedChecks(
        forks={
            r["quirk"]: (int(r["streams"]), int(r["calls"])) for r in rows if r["quirk"] is not None
        },
        lost=sum(int(r["lost"] or 0) for r in rows),
        pending=sum(int(r["pending"] or 0) for r in rows),
    )


def format_unflagged_forks(found: dict[str, tuple[int, int]]) -> list[str]:
    """``toolwatch store info``'s lines for :attr:`ImportedChecks.forks` (none when empty)."""
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


def format_unanswered(lost: int, pending: int) -> list[str]:
    """``toolwatch store info``'s lines for the calls without result (none for a 0), and for
    pending calls what a re-import would change (a store filled before the ``no_result`` rule
    counts its abandoned calls as pending)."""
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
        lines.append(f"  {PENDING_REMEDY}")
    return lines
