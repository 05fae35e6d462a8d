"""The detector names and the statistic columns they fill, apart from the detectors (numpy):
``toolwatch CMD --help`` and the summaries read them without loading the scorer. Standard
library only."""

from __future__ import annotations

from typing import Final

DETECTORS: Final[tuple[str, ...]] = ("point", "ewma", "cusum")


def stat_column(cue_set: str, detector: str) -> str:
    """Name of the column holding ``detector``'s statistic over ``cue_set`` (``all_cusum``)."""
    return f"{cue_set}_{detector}"


def parse_statistic(name: str) -> tuple[str, str]:
    """``"all_cusum"`` -> ``("all", "cusum")``."""
    cue_set, _, detector = name.rpartition("_")
    return cue_set, detector
