"""The published figures toolwatch reproduces (BRIEF §2–4), written down once.

Every table that prints "ours beside the study's" (stats, experiment, demo, app) reads them
from here.
"""

from __future__ import annotations

from typing import Final

#: Corpus facts of the study (BRIEF §2–3) and of the public transcripts note.
CORPUS: Final[dict[str, float]] = {
    "sessions": 422,
    "calls": 26_327,
    "tools": 78,
    "mcp_servers": 8,
    "mcp_tools": 51,
    "mcp_calls": 1_772,
    "days": 42,
    "inter_response_gaps": 21_300,
    "inter_response_gap_min_s": 1.36,
    "inter_response_gap_median_s": 11.1,
    "inter_response_share_le_1s": 0.0,
    "parallel_calls": 4_618,
    "within_response_gap_median_s": 0.89,
    "within_response_share_le_1s": 0.53,
    "first_use_share": 0.37,
}

#: First and last day of the study's corpus, and its split sizes (sessions, calls).
CORPUS_START: Final = "2026-08-04"
CORPUS_END: Final = "2026-09-14"
SPLITS: Final[dict[str, tuple[int, int]]] = {
    "train": (185, 13_790),
    "calibration": (28, 3_144),
    "test": (64, 8_167),
}
TEST_MIN_CALLS: Final = 30
#: The study's split by time, in days of its 42-day corpus (Aug 4–24 train, Aug 25–31
#: calibration, Sep 1–14 test), and the shares of the corpus that train and calibrate. Every
#: default split (the simulator's dates, the store's default windows) derives from these.
SPLIT_NAMES: Final[tuple[str, ...]] = ("train", "calibration", "test")
SPLIT_DAYS: Final[tuple[int, int, int]] = (21, 7, 14)
TRAIN_SHARE: Final = SPLIT_DAYS[0] / sum(SPLIT_DAYS)
CALIBRATE_SHARE: Final = SPLIT_DAYS[1] / sum(SPLIT_DAYS)

#: Detection rate at 5 % session false alarms, all cues + CUSUM (with 95 % interval if given).
DETECTION_ALL_CUSUM: Final[dict[str, tuple[float, float | None, float | None]]] = {
    "burst": (0.91, 0.85, 0.95),
    "runaway_retry": (0.84, 0.79, 0.88),
    "sequence_hijack": (0.03, None, None),
    "large_exfiltration": (0.02, None, None),
    "exfiltration_2sigma": (0.01, None, None),
    "key_exfiltration": (0.02, None, None),
    "out_of_scope_tool": (0.02, None, None),
    "control_other_normal": (0.01, None, None),
    "control_same_response_burst": (0.01, None, None),
}

#: Best single-cue results: kind -> (cue, detection rate).
DETECTION_SINGLE_CUE: Final[dict[str, tuple[str, float]]] = {
    "burst": ("time", 1.00),
    "runaway_retry": ("failure", 0.89),
    "sequence_hijack": ("order", 0.26),
    "large_exfiltration": ("size", 0.13),
}
RUNAWAY_TIME_ONLY: Final = 0.87

#: Per-call AUC, inserted calls vs all other calls.
AUC: Final[dict[str, float]] = {
    "burst": 0.98,
    "runaway_retry": 0.93,
    "sequence_hijack": 0.87,
    "large_exfiltration": 0.83,
    "exfiltration_2sigma": 0.80,
    "key_exfiltration": 0.74,
    "out_of_scope_tool": 0.79,
    "control_other_normal": 0.51,
    "control_same_response_burst": 0.37,
}

#: Median latency in calls: kind -> (calls, cue, detector).
LATENCY: Final[dict[str, tuple[int, str, str]]] = {
    "burst": (1, "time", "point"),
    "runaway_retry": (5, "failure", "ewma"),
}

#: Without the session's own bigram mix, this share of normal sessions raised a false alarm.
FALSE_ALARM_WITHOUT_SESSION_MIX: Final = 0.22
#: Sessions flagged when scanning every real session at the operating point.
SCAN_FLAGGED_SESSIONS: Final = 3

#: AgentCheck workbench (BRIEF §4): pass rates quoted in the survey.
WORKBENCH: Final[dict[str, str]] = {
    "timeout_pass_without_retry": "30%",
    "timeout_pass_with_retry": "100%",
    "data_quality_unresolved_with_all_mitigations": "3-4 of 10",
}
