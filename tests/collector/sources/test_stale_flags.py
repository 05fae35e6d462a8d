"""A store filled by an importer from before the fork flags keeps those streams unflagged (the
store is append-only; a re-import adds nothing): ``toolwatch store info`` counts the imported
streams whose agent id is a fork's but carry no ``client_quirk``, and says what to do."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from support.paths import FIXTURES
from toolwatch.cli import main
from toolwatch.collector.sources.claude_code import import_transcripts
from toolwatch.collector.sources.delivery import append_new_calls
from toolwatch.collector.sources.stale_flags import ImportedChecks, imported_checks
from toolwatch.collector.store.parquet_store import Store
from toolwatch.conventions import (
    QUIRK_ASIDE_QUESTION_FORK,
    QUIRK_COMPACTION_FORK,
    QUIRK_PROMPT_SUGGESTION_FORK,
    QUIRK_SESSION_MEMORY_FORK,
    QUIRK_WARMUP_AGENT,
)

QUIRKS = FIXTURES / "claude_code_quirks"


def test_store_info_counts_imported_forks_left_unflagged(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    records, report = import_transcripts([QUIRKS], provenance=None)
    old = [  # as an importer from before the fork flags wrote them (warm-ups were flagged)
        r if r.client_quirk == QUIRK_WARMUP_AGENT else dataclasses.replace(r, client_quirk=None)
        for r in records
    ]
    live = [  # a live stream whose agent id looks like a fork's: not the importer's to flag
        dataclasses.replace(r, source="otlp", call_id=f"live-{r.call_id}", span_id="0" * 16)
        for r in old
        if r.agent_id == "acompact-0123456789abcdef"
    ]
    store = Store(tmp_path / "old")
    append_new_calls(store, old + live)
    found = imported_checks(store).forks
    assert found == {
        QUIRK_ASIDE_QUESTION_FORK: (1, 1),
        QUIRK_COMPACTION_FORK: (1, 2),
        QUIRK_PROMPT_SUGGESTION_FORK: (1, 1),
        QUIRK_SESSION_MEMORY_FORK: (2, 2),
    }
    # what the importer flags today, stream for stream and call for call
    assert found == {q: tuple(n) for q, n in report.quirks.items() if q != QUIRK_WARMUP_AGENT}
    assert main(["store", "info", "--store", str(store.root)]) == 0
    out = capsys.readouterr().out
    assert (
        "unflagged forks: 5 imported streams (6 calls) look like client forks but carry no "
        "client_quirk (aside_question_fork 1 stream / 1 call, compaction_fork 1 "
        "stream / 2 calls, prompt_suggestion_fork 1 stream / 1 call, "
        "session_memory_fork 2 streams / 2 calls)\n"
        "  imported before these forks were flagged; re-import the transcripts into a fresh "
        "store (toolwatch import claude-code PATH --store NEW) to flag them: a re-import into "
        "this store adds nothing\n"
    ) in out
    fresh = Store(tmp_path / "fresh")
    append_new_calls(fresh, records)
    assert imported_checks(fresh).forks == {}
    assert main(["store", "info", "--store", str(fresh.root)]) == 0
    assert "unflagged forks" not in capsys.readouterr().out
    assert imported_checks(Store(tmp_path / "none")) == ImportedChecks()


def test_store_info_checks_the_imported_calls_in_one_query(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``store info`` ran the fork check and the count of calls without result each in a
    connection and a scan of its own (1.55× the time of one on a store of 1 M calls in 1,019
    files, 2.8× in 123: ``benchmarks/bench_store_info.py``). One query now gives both: the
    same forks, and the no_result and pending calls counted beside them."""
    records, _ = import_transcripts([QUIRKS], provenance=None)
    old = [
        r if r.client_quirk == QUIRK_WARMUP_AGENT else dataclasses.replace(r, client_quirk=None)
        for r in records
    ]
    old[0] = dataclasses.replace(old[0], failed=True, error_type="no_result", output_bytes=None)
    old[1] = dataclasses.replace(old[1], failed=False, error_type=None, output_bytes=None)
    store = Store(tmp_path / "old")
    append_new_calls(store, old)
    connections = []
    connect = Store.connect
    monkeypatch.setattr(
        Store, "connect", lambda self, **kw: connections.append(1) or connect(self, **kw)
    )
    assert main(["store", "info", "--store", str(store.root)]) == 0
    assert len(connections) == 1
    out = capsys.readouterr().out
    assert "unflagged forks: 5 imported streams (6 calls) look like client forks" in out
    assert "imported calls without result stored as failed: 1, error_type no_result (" in out
    assert "imported calls pending when imported: 1 (" in out
    checks = imported_checks(store)
    assert (checks.lost, checks.pending, sum(c for _, c in checks.forks.values())) == (1, 1, 6)
