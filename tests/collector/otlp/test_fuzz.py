"""Fuzzing in CI, time-bounded: the atheris (coverage-guided) target of the OTLP decoders over
its saved regressions and for 10 s from its seeds, and a property-based HTTP fuzz of a live
``toolwatch collector`` (500 requests here, ``TOOLWATCH_HTTP_FUZZ`` to change;
``benchmarks/fuzz_http.py`` runs 10,000): no 5xx but 503 + Retry-After, the server alive, data
stored before intact, no traceback in its log.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from support.collector import SpanSpec, call, pb_request, post
from support.collector_process import Server
from support.http_fuzz import run_fuzz
from toolwatch.collector.store import Store

FUZZ = Path(__file__).parent / "fuzz"
TARGET = FUZZ / "fuzz_decoders.py"


def _atheris() -> None:
    pytest.importorskip("atheris")


def test_atheris_target_replays_every_saved_regression() -> None:
    _atheris()
    inputs = sorted(str(p) for p in (FUZZ / "regress").glob("*.bin"))
    assert len(inputs) >= 10
    out = subprocess.run(
        [sys.executable, str(TARGET), *inputs], capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stderr.count("Executed ") == len(inputs)


def test_atheris_coverage_guided_run_finds_nothing(tmp_path: Path) -> None:
    _atheris()
    seconds = int(os.environ.get("TOOLWATCH_ATHERIS_SECONDS", "10"))
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    out = subprocess.run(
        [
            sys.executable,
            str(TARGET),
            str(corpus),
            str(FUZZ / "seeds"),
            f"-dict={FUZZ / 'otlp.dict'}",
            f"-max_total_time={seconds}",
            "-rss_limit_mb=3072",
            "-timeout=20",
            f"-artifact_prefix={tmp_path}/",
        ],
        capture_output=True,
        text=True,
        timeout=seconds + 240,
    )
    crashes = list(tmp_path.glob("crash-*")) + list(tmp_path.glob("timeout-*"))
    assert out.returncode == 0 and not crashes, (crashes, out.stderr[-3000:])
    done = re.search(r"Done (\d+) runs", out.stderr)
    assert done and int(done.group(1)) >= 500, out.stderr[-2000:]


def test_http_fuzz_never_5xx_and_keeps_earlier_data(tmp_path: Path) -> None:
    examples = int(os.environ.get("TOOLWATCH_HTTP_FUZZ", "500"))
    server = Server(tmp_path)
    try:
        earlier = [SpanSpec(call(session="before-fuzz", seq=i)) for i in range(50)]
        assert post(server.url, pb_request(earlier)).status == 200
        result = run_fuzz(server.port, examples)
        assert result.unanswered == 0 and not result.bad, (result.statuses, result.bad[:3])
        assert result.examples >= examples * 0.9, result.examples
        assert server.get("/health")[0] == 200
    finally:
        text = server.stop()
    assert server.proc.returncode == 0
    kept = Store(server.store).query(
        "SELECT count(*) AS n FROM calls WHERE session_id = 'before-fuzz'"
    )
    assert kept.column("n")[0].as_py() == 50
    assert "Traceback" not in text and "internal error" not in text, text[-3000:]
    print(
        f"HTTP fuzz: {result.examples} requests in {result.seconds:.0f} s: {dict(result.statuses)}"
    )
