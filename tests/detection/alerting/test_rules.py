"""Alert rules: validation with clear errors, crossing semantics on a real store, delivery to
the log, the ``rule_alerts`` table and a webhook, and the collector evaluating them."""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest

from toolwatch.collector.store.parquet_store import Store
from toolwatch.detection.alerting.rules import (
    RULE_ALERTS_TABLE,
    RuleError,
    RuleEvaluator,
    load_rules,
    parse_duration,
)
from toolwatch.detection.alerting.webhook import WebhookPoster
from toolwatch.record import CallRecord

NOW = datetime(2026, 8, 20, 12, 0, tzinfo=UTC)
#: A valid rule's fields, to add one bad field to
OK = '[[rule]]\nname = "a"\nsql = "SELECT 1 AS value"\nwindow = "1m"\nthreshold = 1\n'
RULE = """
[[rule]]
name = "tool-failing"
description = "a tool failed more than 2 times in 10 minutes"
window = "10m"
every = "1m"
threshold = 2
sql = '''
SELECT tool, count(*) AS value FROM recent_calls WHERE failed GROUP BY tool
'''
"""


def call(i: int, tool: str, failed: bool, at: datetime, session: str = "s1") -> dict[str, Any]:
    return CallRecord(
        trace_id=f"{i + 1:032x}",
        span_id=f"{i + 1:016x}",
        session_id=session,
        agent_id=None,
        seq=i,
        tool=tool,
        server=None,
        start_time=at,
        duration_us=1000,
        input_bytes=100,
        output_bytes=None if failed else 200,
        failed=failed,
        error_type="tool_error" if failed else None,
        response_id=f"msg_{i}",
        call_id=f"toolu_{i}",
        source="otlp",
    ).as_dict()


@pytest.fixture
def store(tmp_path: Path) -> Store:
    s = Store(tmp_path / "store")
    # Grep fails 3 times in the 10 minutes before NOW, Read once; a Grep failure an hour
    # earlier is outside the window
    rows = [
        call(0, "Grep", True, NOW - timedelta(hours=1)),
        call(1, "Grep", True, NOW - timedelta(minutes=9)),
        call(2, "Grep", True, NOW - timedelta(minutes=5)),
        call(3, "Read", True, NOW - timedelta(minutes=4)),
        call(4, "Grep", True, NOW - timedelta(minutes=1)),
        call(5, "Read", False, NOW - timedelta(seconds=30)),
    ]
    s.append("calls", rows)
    return s


def rules_file(tmp_path: Path, text: str = RULE) -> Path:
    path = tmp_path / "rules.toml"
    path.write_text(text)
    return path


def test_a_rule_fires_once_per_excursion_and_is_stored(
    store: Store, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    rules = load_rules(rules_file(tmp_path), store)
    evaluator = RuleEvaluator(rules, store)
    with caplog.at_level(logging.WARNING):
        alerts = evaluator.tick(NOW)
    # independent count: Grep failures with start in (NOW - 10 min, NOW]
    assert [(a["rule"], json.loads(a["key"]), a["value"]) for a in alerts] == [
        ("tool-failing", {"tool": "Grep"}, 3.0)
    ]
    assert "ALERT rule tool-failing" in caplog.text and '"Grep"' in caplog.text
    stored = store.query(f"SELECT rule, key, value, threshold, op FROM {RULE_ALERTS_TABLE}")
    assert stored.to_pylist() == [
        {
            "rule": "tool-failing",
            "key": '{"tool": "Grep"}',
            "value": 3.0,
            "threshold": 2.0,
            "op": ">",
        }
    ]
    # not due again within its period; due after it, still above: no second alert
    assert evaluator.tick(NOW + timedelta(seconds=30)) == []
    assert evaluator.tick(NOW + timedelta(seconds=61)) == []
    assert evaluator.evaluations == 2
    # the window slides past the failures: below again, then a new burst re-arms it
    assert evaluator.tick(NOW + timedelta(minutes=20)) == []
    later = NOW + timedelta(minutes=30)
    store.append(
        "calls", [call(10 + i, "Grep", True, later - timedelta(seconds=i)) for i in range(4)]
    )
    again = evaluator.tick(later)
    assert [(a["key"], a["value"]) for a in again] == [('{"tool": "Grep"}', 4.0)]
    assert store.query(f"SELECT count(*) AS n FROM {RULE_ALERTS_TABLE}").to_pylist() == [{"n": 2}]


def test_a_rule_without_grouping_and_another_operator(store: Store, tmp_path: Path) -> None:
    text = (
        '[[rule]]\nname = "quiet"\nwindow = "5m"\nop = "<"\nthreshold = 1\n'
        'sql = "SELECT count(*) AS value FROM recent_calls"\n'
    )
    evaluator = RuleEvaluator(load_rules(rules_file(tmp_path, text), store), store)
    assert evaluator.tick(NOW) == []  # 3 calls in the last 5 minutes
    silent = evaluator.tick(NOW + timedelta(hours=2))
    assert [(a["rule"], a["key"], a["value"]) for a in silent] == [("quiet", "", 0.0)]


class _Hook(BaseHTTPRequestHandler):
    received: ClassVar[list[dict[str, Any]]] = []

    def do_POST(self) -> None:
        self.received.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def hook() -> Iterator[tuple[str, type[_Hook]]]:
    handler = type("Hook", (_Hook,), {"received": []})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/alerts", handler
    server.shutdown()
    server.server_close()


def test_rule_alerts_reach_the_webhook(store: Store, tmp_path: Path, hook: Any) -> None:
    url, handler = hook
    poster = WebhookPoster(url)
    evaluator = RuleEvaluator(load_rules(rules_file(tmp_path), store), store, poster=poster)
    evaluator.tick(NOW)
    assert poster.flush(10)
    evaluator.close()
    (batch,) = handler.received
    (alert,) = batch["alerts"]
    assert alert["kind"] == "rule" and alert["rule"] == "tool-failing" and alert["value"] == 3.0
    assert alert["alert_time"] == NOW.isoformat()


def test_a_failing_query_at_run_time_is_logged_not_raised(
    store: Store, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    rules = load_rules(rules_file(tmp_path), store)
    broken = replace(rules[0], sql="SELECT 1 / 0 AS value FROM recent_calls WHERE tool::INT > 0")
    evaluator = RuleEvaluator([broken], store)
    with caplog.at_level(logging.ERROR):
        assert evaluator.tick(NOW) == []
    assert evaluator.failures == 1 and "could not be evaluated" in caplog.text


def test_a_value_that_is_not_a_number_at_run_time_is_logged_not_raised(
    store: Store, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Past the check (a rule built by hand), a value that is no number is a failed
    evaluation, never an exception out of the collector's main loop."""
    rules = load_rules(rules_file(tmp_path), store)
    odd = replace(rules[0], sql="SELECT [1] AS value")
    evaluator = RuleEvaluator([odd], store)
    with caplog.at_level(logging.ERROR):
        assert evaluator.tick(NOW) == []
    assert evaluator.failures == 1 and "value is a list, not a number" in caplog.text


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("[[rule]\n", "not valid TOML"),
        ("rule = 1\n", "'rule' must be a list of tables"),
        ("[other]\nx = 1\n", "unknown top-level key ['other']"),
        ('[[rule]]\nname = "a"\n', "rule 1: the field 'sql' is missing"),
        (
            '[[rule]]\nname = "a"\nsql = "SELECT 1 AS value"\nwindow = "1m"\nthreshold = 1\n'
            '[[rule]]\nname = "a"\nsql = "SELECT 1 AS value"\nwindow = "1m"\nthreshold = 1\n',
            "rule 2: the name 'a' is used twice",
        ),
        ('[[rule]]\nname = "a b"\nsql = "x"\nwindow = "1m"\nthreshold = 1\n', "name must be"),
        (
            OK + "limit = 3\n",
            "unknown field ['limit']",
        ),
        (
            '[[rule]]\nname = "a"\nsql = "SELECT 1 AS value"\nwindow = "ten"\nthreshold = 1\n',
            "rule 1 (a): window: a duration like",
        ),
        (
            '[[rule]]\nname = "a"\nsql = "SELECT 1 AS value"\nwindow = "1m"\nthreshold = "x"\n',
            "threshold must be a number",
        ),
        (
            OK + 'op = "=="\n',
            "op must be one of",
        ),
        (
            OK + 'every = "1s"\n',
            "every must be at least 5 s",
        ),
        (
            OK.replace('"1m"', '"1000000d"'),  # reached before year 1: OverflowError, exit 70
            "window: must be at most 36,500 days",
        ),
        (
            OK.replace(
                "SELECT 1 AS value",
                "SELECT column0 AS who, 1 AS value FROM read_csv('/etc/passwd', header=false)",
            ),  # read any file and sent its lines out as alert keys
            "file system operations are disabled",
        ),
        (
            '[[rule]]\nname = "a"\nsql = "DELETE FROM calls"\nwindow = "1m"\nthreshold = 1\n',
            "exactly one SELECT statement",
        ),
        (
            '[[rule]]\nname = "a"\nsql = "SELECT 1 AS n"\nwindow = "1m"\nthreshold = 1\n',
            "must return a column named value (got ['n'])",
        ),
        (
            '[[rule]]\nname = "a"\nsql = "SELECT \'x\' AS value"\nwindow = "1m"\nthreshold = 1\n',
            "the value column must be numeric",
        ),
        *(
            (
                OK.replace("SELECT 1 AS value", sql),  # passed, then crashed the collector
                "the value column must be numeric",
            )
            for sql in (
                "SELECT max(start_time) - min(start_time) AS value FROM recent_calls",
                "SELECT [1, 2] AS value",
                "SELECT {'n': 1} AS value",
                "SELECT 'P1D'::INTERVAL AS value",
            )
        ),
        (
            '[[rule]]\nname = "a"\nsql = "SELECT nope AS value FROM recent_calls"\nwindow = "1m"\n'
            "threshold = 1\n",
            'Referenced column "nope" not found',
        ),
    ],
)
def test_bad_rules_files_say_what_is_wrong(
    store: Store, tmp_path: Path, text: str, needle: str
) -> None:
    path = rules_file(tmp_path, text)
    with pytest.raises(RuleError) as caught:
        load_rules(path, store)
    message = str(caught.value)
    assert needle in message and str(path) in message and "\n" not in message


def test_durations() -> None:
    assert [parse_duration(x, "w") for x in ("30s", "10m", "1.5h", "1d", 90)] == [
        30.0,
        600.0,
        5400.0,
        86400.0,
        90.0,
    ]
    with pytest.raises(RuleError, match="longer than 0 s"):
        parse_duration("0s", "w")


def test_the_collector_evaluates_the_stores_rules(tmp_path: Path) -> None:
    """``toolwatch collector`` finds STORE/rules.toml, evaluates it from its main loop, and
    the alert lands in the store (a real process, stopped by SIGTERM)."""
    store = Store(tmp_path / "live")
    now = datetime.now(UTC)
    store.append("calls", [call(i, "Grep", True, now - timedelta(seconds=5 + i)) for i in range(3)])
    rules_file(store.root)  # STORE/rules.toml: found without --rules
    proc = subprocess.Popen(
        [sys.executable, "-m", "toolwatch", "collector", "--store", str(store.root), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not store.files(RULE_ALERTS_TABLE):
            assert proc.poll() is None, proc.stdout.read() if proc.stdout else ""
            time.sleep(0.2)
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0, out
    assert "alert rules: 1 from" in out and "ALERT rule tool-failing" in out
    rows = store.query(f"SELECT rule, key, value FROM {RULE_ALERTS_TABLE}").to_pylist()
    assert rows == [{"rule": "tool-failing", "key": '{"tool": "Grep"}', "value": 3.0}]


HEAVY = "SELECT count(*) AS value FROM range(10000000000000)"  # hours of one core


@pytest.mark.timeout(30)  # unfixed, the query runs for hours
def test_a_query_longer_than_its_limit_is_stopped_and_logged(
    store: Store, tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A rule's query ran unbounded in the collector's main loop: a core held for hours and
    SIGTERM not acted on until it ended. It now runs for its period, at most MAX_QUERY_S."""
    from toolwatch.detection.alerting import rules as rules_module

    monkeypatch.setattr(rules_module, "MAX_QUERY_S", 0.5)
    heavy = replace(load_rules(rules_file(tmp_path), store)[0], sql=HEAVY)
    evaluator = RuleEvaluator([heavy], store)
    started = time.monotonic()
    with caplog.at_level(logging.ERROR):
        assert evaluator.tick(NOW) == []
    assert time.monotonic() - started < 10
    assert evaluator.failures == 1 and "the query was stopped (0.5 s at most)" in caplog.text


@pytest.mark.timeout(30)  # unfixed, the query runs for hours
def test_interrupt_stops_the_running_query_at_once(
    store: Store, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The collector's SIGINT/SIGTERM handler calls interrupt(): shutdown waits for no query."""
    heavy = replace(load_rules(rules_file(tmp_path), store)[0], sql=HEAVY, every_s=3600.0)
    evaluator = RuleEvaluator([heavy], store)
    done, interrupt = threading.Event(), evaluator.interrupt

    def signals() -> None:  # as the handler would, whenever the query is under way
        while not done.wait(0.3):
            interrupt()

    threading.Thread(target=signals, daemon=True).start()
    started = time.monotonic()
    try:
        assert evaluator.tick(NOW) == []
    finally:
        done.set()
    assert time.monotonic() - started < 10 and evaluator.failures == 1
    assert "the query was stopped (the collector is stopping)" in caplog.text
    evaluator.interrupt()  # nothing running: a no-op
