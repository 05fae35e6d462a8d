"""A property-based fuzz of a live ``toolwatch proxy`` in CI, bounded (120 HTTP actions and 100
stdio lines per era here, ``TOOLWATCH_PROXY_FUZZ`` to change; ``benchmarks/fuzz_proxy.py`` runs
thousands): no 5xx but 503, no connection dropped, every well-behaved round right, the proxy
alive, no traceback in its log, its stdio lines all JSON, its upstream processes bounded.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from support.proxy_fuzz import run_http, run_stdio
from support.proxy_fuzz_http import Http, good_round
from support.proxy_process import ProxyProcess

EXAMPLES = int(os.environ.get("TOOLWATCH_PROXY_FUZZ", "120"))
BOUND = 3  # --max-upstream-sessions: the fuzz abandons more clients than that


def test_http_fuzz_never_5xx_and_a_well_behaved_client_is_answered(tmp_path: Path) -> None:
    proxy = ProxyProcess(tmp_path, "http", extra=["--max-upstream-sessions", str(BOUND)])
    try:
        result = run_http(proxy, EXAMPLES)
        assert good_round(Http(proxy.url), modern=False) is None
    finally:
        log = proxy.stop()
    assert not result.bad and not result.timeouts, (result.bad[:3], result.timeouts)
    assert result.good_failed == [] and result.good >= EXAMPLES // 20
    assert result.examples >= EXAMPLES * 0.9 and result.actions["Abandon"] > BOUND
    assert max(m["processes"] for m in result.memory) <= BOUND + 2
    assert "Traceback" not in log, log[-3000:]


@pytest.mark.parametrize("modern", [False, True], ids=["handshake", "2026-07-28"])
def test_stdio_fuzz_keeps_answering_and_ends_cleanly(tmp_path: Path, modern: bool) -> None:
    proxy = ProxyProcess(tmp_path, "stdio")
    try:
        result, not_json = run_stdio(proxy, EXAMPLES, modern=modern)
    finally:
        log = proxy.stop()  # its client gone mid-call
    assert result.good_failed == [] and result.good >= EXAMPLES // 20
    assert not_json == 0
    assert proxy.proc.returncode == 0
    assert "Traceback" not in log, log[-3000:]
