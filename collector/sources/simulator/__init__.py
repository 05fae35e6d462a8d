"""The SIMULATED workload: a corpus with the structure of the study's (BRIEF §2–3), labelled
simulated in every row.

:func:`simulate` / :func:`generate` build it (the steps are in :mod:`.workload`), the split
helpers place its streams in the study's train/calibration/test days; the inventory of tools
is data (:mod:`.tools`) and the tuning is in :mod:`.calibration`.
"""

from toolwatch.collector.sources.simulator.config import (
    SOURCE,
    SPLIT_DATES,
    SimulationConfig,
    split_dates,
)
from toolwatch.collector.sources.simulator.splits import Stream, assign_splits, stream_calls
from toolwatch.collector.sources.simulator.workload import generate, simulate

__all__ = [
    "SOURCE",
    "SPLIT_DATES",
    "SimulationConfig",
    "Stream",
    "assign_splits",
    "generate",
    "simulate",
    "split_dates",
    "stream_calls",
]
