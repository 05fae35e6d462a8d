"""Scoring calls with a normal model: the whole table at once (batch), call by call (online,
the same floats), and the scan that ranks the streams flagged at the operating point."""

from toolwatch.detection.scoring.batch import run_detector, score_calls
from toolwatch.detection.scoring.online import OnlineScorer
from toolwatch.detection.scoring.scan import ScanResult, scan

__all__ = ["OnlineScorer", "ScanResult", "run_detector", "scan", "score_calls"]
