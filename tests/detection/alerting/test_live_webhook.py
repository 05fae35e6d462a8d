"""What the on-call engineer learns of a webhook that does not take the alerts: the live
scorer's ``/metrics`` and shutdown line count them (a real collector's HTTP, a real receiver)."""

from __future__ import annotations

import http.client
import logging
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from support.collector_process import Server
from support.detection import T0, call, session, table, workload
from support.webhook import webhook_receiver
from toolwatch.collector.otlp.server import Collector
from toolwatch.collector.store.parquet_store import Store
from toolwatch.detection import NormalModel
from toolwatch.detection.alerting.live import LiveScorer
from toolwatch.detection.alerting.webhook import WebhookPoster

#: fires once three failed calls are stored (a rule alert, "kind": "rule")
RULE = """
[[rule]]
name = "failing"
window = "10m"
every = "1m"
threshold = 2
sql = "SELECT count(*) AS value FROM recent_calls WHERE failed"
"""


@pytest.fixture(scope="module")
def model_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    model = NormalModel.fit(workload(1, 40, tools=8)).calibrate(workload(2, 10, tools=8))
    return model.save(tmp_path_factory.mktemp("model") / "model.json")


def _loop(name: str) -> object:
    return table(session(["tool03"] * 25, name=name, gap=2.0, failed=True))


def _metrics(port: int) -> set[str]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request("GET", "/metrics")
    text = conn.getresponse().read().decode()
    conn.close()
    return set(text.splitlines())


def test_a_webhook_answering_500_is_counted_on_metrics_and_at_shutdown(
    model_path: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A receiver answering 500 to every retry lost the alerts with one ERROR line each: the
    collector's /metrics and its shutdown line said nothing of the webhook."""
    store = Store(tmp_path / "s")
    with webhook_receiver() as (url, handler):
        handler.script = [500] * 3  # the first batch's attempts, then the receiver is back
        poster = WebhookPoster(url, max_attempts=3, backoff_s=0.01)
        live = LiveScorer(model_path, store, poster=poster)
        with Collector(store, port=0, compact_interval=None, extra_metrics=live.metrics) as c:
            lost = live.process(_loop("lost"))
            assert lost and poster.flush(10)
            taken = live.process(_loop("taken"))
            assert taken and poster.flush(10)
            lines = _metrics(c.port)
        with caplog.at_level(logging.INFO):
            live.close()
        assert [a["session_id"] for b in handler.received for a in b["alerts"]] == ["taken"]
    assert f"toolwatch_collector_live_webhook_alerts_undelivered_total {len(lost)}.0" in lines
    assert f"toolwatch_collector_live_webhook_alerts_delivered_total {len(taken)}.0" in lines
    stopped = [r.getMessage() for r in caplog.records if "live scoring stopped" in r.getMessage()]
    assert len(stopped) == 1
    assert f"webhook_alerts_delivered={len(taken)}" in stopped[0]
    assert f"webhook_alerts_undelivered={len(lost)}" in stopped[0]


def test_alerts_left_when_the_sender_stops_are_counted_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A slow receiver at shutdown: the batch in flight and those still queued were left
    without a word; they are counted undelivered (and not again if the late answer comes)."""
    with webhook_receiver() as (url, handler):
        handler.delay = 1.0
        poster = WebhookPoster(url, exit_timeout_s=0.3)
        for name in ("a", "b", "c"):
            assert poster.post([{"session_id": name}])
        time.sleep(0.1)  # "a" is in flight
        with caplog.at_level(logging.ERROR):
            poster.close()
        assert poster.alerts == {"delivered": 0, "undelivered": 3}
        assert any("3 alerts not delivered" in r.getMessage() for r in caplog.records)
        time.sleep(1.5)  # the receiver answers "a" after the sender gave up on it
        assert [b["alerts"][0]["session_id"] for b in handler.received] == ["a"]
    assert poster.alerts == {"delivered": 0, "undelivered": 3}


def test_a_slow_receiver_gets_a_backlog_in_few_posts_each_alert_once_in_order() -> None:
    """One POST per queued batch: a receiver taking 0.5 s per answer got 60 one-alert batches
    in 30 s (at 3 s an answer, 3 of 60 in 15 s). Batches waiting are now sent in one POST."""
    names = [f"s{i:02d}" for i in range(60)]
    with webhook_receiver() as (url, handler):
        handler.delay = 0.5
        poster = WebhookPoster(url)
        started = time.monotonic()
        for name in names:  # one write's alerts each, as fast as the collector raises them
            assert poster.post([{"session_id": name}])
        assert poster.flush(5), f"{len(handler.received)} posts in 5 s"
        elapsed = time.monotonic() - started
        poster.close()
    assert [a["session_id"] for b in handler.received for a in b["alerts"]] == names
    assert elapsed < 3 and poster.alerts == {"delivered": 60, "undelivered": 0}


def test_a_post_holds_at_most_max_post_alerts_and_never_splits_a_batch() -> None:
    """The cap bounds a POST's body; a write's batch stays whole, even one above the cap."""
    with webhook_receiver() as (url, handler):
        handler.delay = 0.3
        poster = WebhookPoster(url, max_post_alerts=4)
        assert poster.post([{"session_id": "a"}])
        time.sleep(0.1)  # "a" is in flight, the rest waits
        for batch in [["b", "c"], ["d", "e"], ["f"], ["g", "h", "i", "j", "k"], ["l"]]:
            assert poster.post([{"session_id": name} for name in batch])
        assert poster.flush(10)
        poster.close()
    posts = [[a["session_id"] for a in b["alerts"]] for b in handler.received]
    assert posts == [["a"], ["b", "c", "d", "e"], ["f"], ["g", "h", "i", "j", "k"], ["l"]]


DELIVERED_1 = "toolwatch_collector_live_webhook_alerts_delivered_total 1.0"


def test_rule_alerts_posted_are_counted_on_a_real_collectors_metrics(tmp_path: Path) -> None:
    """Rule and listing alerts went to the webhook through posters of their own: without
    --model the collector's /metrics and its log said nothing of their delivery. One poster
    now carries every kind, counted on /metrics and in the shutdown line."""
    ago = (datetime.now(UTC) - T0).total_seconds()  # 5-7 s ago: inside the rule's window
    failed = [call("Grep", ago - 5 - i, failed=True, seq=i, n=i) for i in range(3)]
    Store(tmp_path / "store").append("calls", failed)
    rules = tmp_path / "rules.toml"
    rules.write_text(RULE)
    with webhook_receiver() as (url, handler):
        server = Server(tmp_path, extra=["--rules", str(rules), "--webhook", url])
        try:
            deadline = time.monotonic() + 60  # the rule runs at start; its POST is counted
            while time.monotonic() < deadline:  # once the receiver has answered
                lines = set(server.get("/metrics")[1].decode().splitlines())
                if handler.received and DELIVERED_1 in lines:
                    break
                time.sleep(0.2)
        finally:
            log = server.stop()
    assert [a["kind"] for b in handler.received for a in b["alerts"]] == ["rule"]
    assert DELIVERED_1 in lines
    assert "toolwatch_collector_live_webhook_alerts_undelivered_total 0.0" in lines
    assert "live alerts stopped: webhook_alerts_delivered=1, webhook_alerts_undelivered=0" in log
