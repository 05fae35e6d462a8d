"""Claude Code importer on the folders a user really has: directories it may not list,
transcripts still being written, damaged and otherwise-packed backups, and odd files. Inputs
are small hand-made transcripts (the helpers of ``test_claude_code_perturbed``); the rule each
test holds: every call counted once, and whatever is not read is named with its reason."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from support.disk import unprivileged, world_readable_dir
from support.transcripts import SESSION, call_line, jsonl
from toolwatch.collector.sources.claude_code import import_transcripts, scan_transcripts


@pytest.fixture
def open_dir() -> Iterator[Path]:
    """A directory a normal user can enter, removed after (permissions restored first)."""
    with world_readable_dir() as path:
        yield path


def test_a_directory_that_cannot_be_listed_is_named_not_passed_over(open_dir: Path) -> None:
    """``Path.rglob`` skipped a directory it could not list without a word, and the
    transcripts inside with it. It is now named with its reason, beside the files read."""
    root = open_dir / "projects"
    locked = root / "-home-u-secret"
    locked.mkdir(parents=True)
    (locked / "s.jsonl").write_text(jsonl(SESSION))
    (root / "-home-u-open").mkdir()
    (root / "-home-u-open" / "t.jsonl").write_text(
        jsonl([call_line("toolu_z", "2026-03-02T10:00:00.000Z")])
    )
    locked.chmod(0)
    with unprivileged():
        scan = scan_transcripts([root])
        records, report = import_transcripts([root])
    assert [t.shown for t in scan.files] == [str(root / "-home-u-open" / "t.jsonl")]
    assert scan.unlisted_dirs == [(str(locked), "permission denied")]
    assert [r.call_id for r in records] == ["toolu_z"]
    assert report.unlisted_dirs == [(str(locked), "permission denied")]
    assert report.unreadable_files == []
