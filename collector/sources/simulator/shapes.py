"""Step 3 of ``workload.generate``, **shape**: input bytes, result bytes and duration of each call,
from per-tool log-normals (failed calls have their own result sizes; interactive sessions wait
for the person's approval now and then).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from toolwatch.collector.sources.simulator.calibration import (
    APPROVAL_MED,
    APPROVAL_SD,
    APPROVAL_SHARE,
    DURATION_MAX,
    FAILED_OUT,
    FAILED_OUT_BASH,
    OUT_MAX,
    SESSION_SIZE_SD,
)
from toolwatch.collector.sources.simulator.plan import SessionPlan
from toolwatch.collector.sources.simulator.tools import (
    ALL_TOOLS,
    APPROVAL_TOOLS,
    TOOL_INDEX,
)


def _per_tool(attr: str) -> np.ndarray:
    return np.array([getattr(t, attr) for t in ALL_TOOLS], dtype=float)


def call_shapes(
    tool: np.ndarray,
    failed: np.ndarray,
    session_of: np.ndarray,
    plans: Sequence[SessionPlan],
    rng: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Input bytes, result bytes and durations (seconds): per-tool log-normals."""
    n = len(tool)
    tails = [t.in_tail or (0.0, 1.0, 0.0) for t in ALL_TOOLS]
    tail_p, tail_med, tail_sd = (np.array(c)[tool] for c in zip(*tails, strict=True))
    in_sd = _per_tool("in_sd")[tool]
    session_size = rng.normal(0.0, SESSION_SIZE_SD, len(plans))[session_of] * (in_sd > 0)
    z = rng.standard_normal(n)
    log_in = np.where(
        rng.random(n) < tail_p,
        np.log(tail_med) + tail_sd * z,
        np.log(_per_tool("in_med"))[tool] + in_sd * z + session_size,
    )
    input_bytes = np.maximum(2, np.round(np.exp(log_in))).astype(np.int64)

    bash = tool == TOOL_INDEX["Bash"]
    fail_mu = np.log(np.where(bash, FAILED_OUT_BASH[0], FAILED_OUT[0]))
    fail_sd = np.where(bash, FAILED_OUT_BASH[1], FAILED_OUT[1])
    z = rng.standard_normal(n)
    log_out = np.where(
        failed,
        fail_mu + fail_sd * z,
        np.log(_per_tool("out_med"))[tool] + _per_tool("out_sd")[tool] * z,
    )
    output_bytes = np.minimum(np.round(np.exp(log_out)), OUT_MAX).astype(np.int64)

    d_sd = _per_tool("dur_sd")[tool]
    duration = np.exp(np.log(_per_tool("dur_med"))[tool] + d_sd * rng.standard_normal(n))
    interactive = np.array([p.interactive for p in plans])[session_of]
    approval = np.isin(tool, [TOOL_INDEX[t] for t in APPROVAL_TOOLS]) & interactive
    waits = approval & (rng.random(n) < APPROVAL_SHARE)
    duration += waits * np.exp(math.log(APPROVAL_MED) + APPROVAL_SD * rng.standard_normal(n))
    return input_bytes, output_bytes, np.minimum(duration, DURATION_MAX)
