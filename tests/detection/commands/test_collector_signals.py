"""``toolwatch collector`` stopped by a signal, as a real process: Ctrl-C exits 130 like every
interrupted toolwatch command, a service manager's SIGTERM exits 0, and either way the calls
accepted before it are in the store."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from support.collector_process import Server, request, tool_span
from toolwatch.collector.store.parquet_store import Store


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 0)])
def test_a_stop_signal_sets_the_exit_code_and_keeps_what_was_accepted(
    tmp_path: Path, sig: signal.Signals, code: int
) -> None:
    server = Server(tmp_path)
    try:
        assert server.post(request([tool_span("s1"), tool_span("s2")]))[0] == 200
    finally:
        log = server.stop(sig=sig)
    assert server.proc.returncode == code
    assert "Traceback" not in log
    assert Store(server.store).query("SELECT count(*) AS n FROM calls").column("n")[0].as_py() == 2
