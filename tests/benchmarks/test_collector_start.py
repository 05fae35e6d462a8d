"""A collector that never answers ``/health`` (support's :class:`Server`, which the OTLP and
catch-up tests and two benchmarks start): it is stopped, not left running, and the benchmarks say
so in one line and exit 1. ``fuzz_http.py`` gave a traceback after 30 s and left the collector
running when a loaded machine kept it from answering in time."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from support.benchmarks import load_benchmark
from support.collector_process import CollectorDidNotStart, Server


def _children() -> set[int]:
    """This process's child pids (running or not yet reaped), from /proc."""
    found: set[int] = set()
    for task in os.listdir("/proc/self/task"):
        text = Path(f"/proc/self/task/{task}/children").read_text()
        found.update(int(pid) for pid in text.split())
    return found


def test_a_collector_whose_port_is_taken_is_said_at_once(tmp_path: Path) -> None:
    before = _children()
    with socket.socket() as taken:  # bound, not listening: refuses connections, keeps the port
        taken.bind(("127.0.0.1", 0))
        port = taken.getsockname()[1]
        with pytest.raises(CollectorDidNotStart) as failed:
            Server(tmp_path, port=port, start_timeout=60)
    message = str(failed.value)
    assert message.startswith("the collector exited with code 1 before answering /health; ")
    assert "its log: " in message and str(port) in message and "\n" not in message
    assert _children() == before


def test_a_collector_that_does_not_answer_in_time_is_stopped(tmp_path: Path) -> None:
    before = _children()
    with pytest.raises(CollectorDidNotStart) as failed:
        Server(tmp_path, start_timeout=0.01)
    assert str(failed.value).startswith("the collector did not answer /health within 0.01 s; ")
    assert _children() == before


@pytest.mark.parametrize("name", ["fuzz_http", "bench_hostile_clients"])
def test_a_benchmark_says_a_collector_that_did_not_start_in_one_line(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    before = _children()
    assert load_benchmark(name).main(["--start-timeout", "0.01"]) == 1
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1, err
    assert "the collector did not answer /health within 0.01 s; its log: " in err
    assert "Traceback" not in err
    assert _children() == before
