"""Live alerts: the scorer the collector runs on every committed batch, the ``alerts`` rows it
writes, and the webhook that delivers them (retried, never blocking ingest)."""

from toolwatch.detection.alerting.live import LiveScorer
from toolwatch.detection.alerting.webhook import WebhookPoster

__all__ = ["LiveScorer", "WebhookPoster"]
