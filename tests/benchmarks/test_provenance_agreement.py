"""provenance_agreement.py needs inputs no clone holds (issue 13's CSV, raw transcripts): a
missing one is one line and exit 1, not a traceback."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

from support.benchmarks import load_benchmark

bench = load_benchmark("provenance_agreement")


def _run(*argv: str) -> tuple[int, str]:
    with contextlib.redirect_stderr(io.StringIO()) as err:
        code = bench.main(list(argv))
    return code, err.getvalue()


def test_a_missing_reference_or_transcript_path_is_one_line_and_exit_1(tmp_path: Path) -> None:
    code, err = _run("--csv", str(tmp_path / "ref.csv"), str(tmp_path))
    assert code == 1
    assert err == f"provenance_agreement: no reference CSV at {tmp_path / 'ref.csv'}\n"
    (tmp_path / "ref.csv").write_text("session_id,agent_id,call_id\n")
    code, err = _run("--csv", str(tmp_path / "ref.csv"), str(tmp_path / "gone"))
    assert code == 1
    assert err == f"provenance_agreement: no such file or directory: {tmp_path / 'gone'}\n"
