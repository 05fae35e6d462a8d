"""The simulator's tuning: every number here was tuned once against the study's marginals
(docs/ARCHITECTURE.md, "Simulated workload"). Kept apart from the steps that use them, so a
change of calibration is a change of this file alone.
"""

from __future__ import annotations

from typing import Final

SHORT_SHARE: Final[dict[str, float]] = {"train": 0.45, "calibration": 0.2}  # not published
SHORT_MEAN: Final = 8.5  # = 1,226 calls / 145 short test-window sessions
LONG_EXTRA_MED: Final = 75.0  # a long session has 30 + log-normal extra calls
LONG_EXTRA_SD: Final = 0.85
LONG_MAX: Final = 1000
SUBAGENT_SHARE: Final[dict[bool, float]] = {True: 0.35, False: 0.15}  # short / long sessions
INTERACTIVE: Final = 0.75
WEEKEND_AVOID: Final = 0.35
MCP_CAP: Final = 0.75  # at most this share of a session's calls go to MCP tools
VOCAB_RATE: Final = 8.0  # P(a tool is in a session's vocabulary) grows with its length
VOCAB_POWER: Final = 0.45
VOCAB_FLOOR: Final = 3.0  # an included tool is expected at least this often
HABIT_SHAPE: Final = 0.5  # gamma shape of the per-session transition preferences
MULTI_BASE: Final = 0.0795  # P(multi-call response) = base × the first tool's propensity
MULTI_P: Final = 0.52  # calls beyond the second ~ geometric(p)
SAME_TOOL_IN_RESPONSE: Final = 0.65
RETRY_AFTER_FAILURE: Final = 0.45
FAIL_GAMMA: Final = (3.0, 1 / 3)  # per-session failure propensity (shape, scale)
FAILED_OUT: Final = (110.0, 0.7)  # result bytes of a failed call (median, log-sd)
FAILED_OUT_BASH: Final = (420.0, 1.5)
OUT_MAX: Final = 400_000
LATENCY_FLOOR: Final = 1.1  # seconds: a model response never starts sooner
LATENCY_MED: Final = 7.6
LATENCY_SD: Final = 0.85
SPEED_SD: Final = 0.2  # per-session model speed
TURN_END: Final = 0.07  # interactive: P(the person speaks before the next response)
THINK_MED: Final = 40.0
THINK_SD: Final = 1.3
THINK_MAX: Final = 3 * 3600.0
WITHIN_MED: Final = 0.94
WITHIN_SD: Final = 1.52
WITHIN_SIZE_POWER: Final = 0.25  # a larger input streams longer inside a response
APPROVAL_SHARE: Final = 0.2
APPROVAL_MED: Final = 4.0
APPROVAL_SD: Final = 1.2
DURATION_MAX: Final = 1800.0
SESSION_SIZE_SD: Final = 0.12
LOOP_LATENCY: Final = (1.3, 0.45)  # the retry loop re-issues fast: floor + log-normal
