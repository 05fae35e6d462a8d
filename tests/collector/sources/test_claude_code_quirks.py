"""The importer flags Claude Code's client quirks (dev-real's README's two, and its other forks).

``tests/fixtures/claude_code_quirks`` was written by hand after the shape of real transcripts
(no real content): a 2.0.x session with a warm-up subagent (first prompt "Warmup", every call
answered by the "Warmup" error), a warm-up agent whose file holds only the answers (the real
``afcd43f`` of aistrad continued in a second session), an ordinary subagent with another error,
a 2.1.x compaction fork (``agent-acompact-<hex>.jsonl``) and two 2.1.x aside-question forks
(``agent-aside_question-<hex>.jsonl``): one beside its main file, replaying only the main call,
and one whose main file is missing, replaying the compacted call and making one of its own; a
2.1.x session with the other forks named ``agent-a<label>-<hex>.jsonl`` (forks that first
write the main thread again): a
prompt-suggestion fork (a denied try of its own) and two session-memory forks (an automatic one
and a manual one with the shorter hex of older versions), beside a subagent the main thread
asked for (``agent-a<hex>``) and one whose label is not known to keep a file
(``aextract_memories``: left unflagged). On dev-real's five sources the same rules flag exactly
the 72 warm-up and 10 compaction-fork streams of its ``streams.csv`` (it holds no other fork
with calls).
"""

from __future__ import annotations

from pathlib import Path

from support.paths import FIXTURES
from toolwatch.cli import main
from toolwatch.collector.sources.claude_code import import_transcripts
from toolwatch.collector.store.parquet_store import Store
from toolwatch.conventions import (
    QUIRK_ASIDE_QUESTION_FORK,
    QUIRK_COMPACTION_FORK,
    QUIRK_PROMPT_SUGGESTION_FORK,
    QUIRK_SESSION_MEMORY_FORK,
    QUIRK_WARMUP_AGENT,
)

QUIRKS = FIXTURES / "claude_code_quirks"


def test_warm_up_agents_and_compaction_forks_are_flagged_per_stream() -> None:
    records, report = import_transcripts([QUIRKS])
    by_stream: dict[tuple[str, str | None], set[str | None]] = {}
    for r in records:
        by_stream.setdefault((r.session_id[:8], r.agent_id), set()).add(r.client_quirk)
    assert by_stream == {
        ("a1b2c3d4", None): {None},  # the main thread
        ("a1b2c3d4", "0aa1"): {QUIRK_WARMUP_AGENT},  # prompt "Warmup", answered "Warmup"
        ("a1b2c3d4", "0bb2"): {QUIRK_WARMUP_AGENT},  # only the answers in its file
        ("a1b2c3d4", "0cc3"): {None},  # another error is not the warm-up
        ("b2c3d4e5", "acompact-0123456789abcdef"): {QUIRK_COMPACTION_FORK},
        # without its main file: the replayed call is the compaction fork's copy (first path),
        # its own call is flagged; beside its main file, its replay is a removed duplicate
        ("b2c3d4e5", "aside_question-fedcba9876543210"): {QUIRK_ASIDE_QUESTION_FORK},
        ("c3d4e5f6", None): {None},
        # each fork replays the main thread (removed duplicates), then its own calls
        ("d4e5f6a7", None): {None},
        ("d4e5f6a7", "aprompt_suggestion-0a1b2c3d4e5f6a7b"): {QUIRK_PROMPT_SUGGESTION_FORK},
        ("d4e5f6a7", "asession_memory-fedcba9876543210"): {QUIRK_SESSION_MEMORY_FORK},
        ("d4e5f6a7", "asession_memory_manual-9f8e7d"): {QUIRK_SESSION_MEMORY_FORK},
        ("d4e5f6a7", "a0f1e2d3c4b5a697"): {None},  # a subagent asked for: a<hex>, no label
        ("d4e5f6a7", "aextract_memories-00112233aabbccdd"): {None},  # not known: unflagged
    }
    assert report.quirks == {
        QUIRK_WARMUP_AGENT: [2, 4],
        QUIRK_COMPACTION_FORK: [1, 2],
        QUIRK_ASIDE_QUESTION_FORK: [1, 1],
        QUIRK_PROMPT_SUGGESTION_FORK: [1, 1],
        QUIRK_SESSION_MEMORY_FORK: [2, 2],
    }
    # flagged calls are kept as they are: real client behaviour, only marked
    assert report.calls == len(records) == 18 and report.duplicates == 7
    forks = {q: [r.call_id for r in records if r.client_quirk == q] for q in report.quirks}
    assert forks[QUIRK_ASIDE_QUESTION_FORK] == ["toolu_Q0"]
    assert forks[QUIRK_PROMPT_SUGGESTION_FORK] == ["toolu_P1"]
    assert forks[QUIRK_SESSION_MEMORY_FORK] == ["toolu_SM1", "toolu_SM2"]
    main = [r.call_id for r in records if r.session_id[:8] == "d4e5f6a7" and r.agent_id is None]
    assert main == ["toolu_S1", "toolu_S2"]  # the replayed calls stay the main thread's


def test_the_flag_reaches_the_store_and_the_import_summary(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    store = tmp_path / "store"
    assert main(["import", "claude-code", str(QUIRKS), "--store", str(store)]) == 0
    out = capsys.readouterr().out
    assert "client quirks flagged (kept, column client_quirk): warmup_agent 2 streams" in out
    rows = (
        Store(store)
        .query("SELECT client_quirk, count(*) AS n FROM calls GROUP BY 1 ORDER BY 1 NULLS FIRST")
        .to_pylist()
    )
    assert rows == [
        {"client_quirk": None, "n": 8},
        {"client_quirk": QUIRK_ASIDE_QUESTION_FORK, "n": 1},
        {"client_quirk": QUIRK_COMPACTION_FORK, "n": 2},
        {"client_quirk": QUIRK_PROMPT_SUGGESTION_FORK, "n": 1},
        {"client_quirk": QUIRK_SESSION_MEMORY_FORK, "n": 2},
        {"client_quirk": QUIRK_WARMUP_AGENT, "n": 4},
    ]
