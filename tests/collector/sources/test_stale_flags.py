"""A store filled by an importer from before the fork flags keeps those streams unflagged (the
store is append-only; a re-import adds nothing): ``toolwatch store info`` counts the imported
streams whose agent id is a fork's but carry no ``client_quirk``, and says what to do."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from support.paths import FIXTURES
from support.transcripts import SID, call_line, jsonl
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
    assert main(["store", "info", "--json", "--store", str(store.root)]) == 0
    imported = json.loads(capsys.readouterr().out)["imported"]
    assert (imported["without_result"], imported["pending"]) == (1, 1)
    assert imported["unflagged_forks"] == {
        q: {"streams": s, "calls": c} for q, (s, c) in checks.forks.items()
    }
    assert imported["unflagged_forks"][QUIRK_COMPACTION_FORK] == {"streams": 1, "calls": 2}


def test_store_info_says_what_a_reimport_changes_for_pending_calls(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Calls imported before the ``no_result`` rule were all stored pending, and ``store info``
    counted them so with no word on what to do, unlike the forks. Which of them went on cannot
    be told from the store (a response in words only is not in it), so a line under the count
    says what a re-import into a fresh store changes; no pending calls, no line."""
    other = "0d9c4f52-aaaa-4bbb-8ccc-000000000002"
    words = {"id": "msg_2", "content": [{"type": "text", "text": "done"}]}
    folder = tmp_path / "transcripts"
    folder.mkdir()
    (folder / f"{SID}.jsonl").write_text(  # toolu_a went on to msg_2; toolu_c is pending
        jsonl(
            [
                call_line("toolu_a", "2026-03-01T10:00:00Z", "msg_1"),
                call_line("toolu_c", "2026-03-01T10:00:09Z", "msg_2"),
            ]
        )
    )
    (folder / f"{other}.jsonl").write_text(  # toolu_w went on to a response in words only
        jsonl(
            [
                call_line("toolu_w", "2026-03-01T10:00:00Z", "msg_1", session=other),
                {
                    "type": "assistant",
                    "sessionId": other,
                    "timestamp": "2026-03-01T10:00:05Z",
                    "message": words,
                },
            ]
        )
    )
    records, report = import_transcripts([folder], provenance=None)
    assert (report.abandoned, report.pending) == (2, 1)
    old = Store(tmp_path / "old")  # as an importer from before the rule stored them
    append_new_calls(old, [dataclasses.replace(r, failed=False, error_type=None) for r in records])
    assert imported_checks(old) == ImportedChecks(lost=0, pending=3)
    assert main(["store", "info", "--store", str(old.root)]) == 0
    out = capsys.readouterr().out
    assert (
        "imported calls pending when imported: 3 (no result yet in their stream's last "
        "response), stored unfailed: no size, no duration\n"
        "  if imported before calls whose stream went on were stored failed, some of these are "
        "such calls: re-import the transcripts into a fresh store (toolwatch import claude-code "
        "PATH --store NEW) to store them failed (no_result) and keep only the calls of each "
        "stream's last response pending; a re-import into this store adds nothing\n"
    ) in out
    answered = Store(tmp_path / "answered")  # today's import without its pending call
    append_new_calls(answered, [r for r in records if r.failed])
    assert imported_checks(answered) == ImportedChecks(lost=2, pending=0)
    assert main(["store", "info", "--store", str(answered.root)]) == 0
    assert "re-import" not in capsys.readouterr().out
