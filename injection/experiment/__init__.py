"""The study's offline injection experiment (BRIEF §3) on any store's calls.

The protocol (:mod:`.protocol`) splits the corpus by time (:mod:`.split`), injects every kind
into the test sessions (:mod:`.runs`), scores them in one batch (:mod:`.scoring`), chooses the
thresholds and measures detection, latency and AUC (:mod:`.outcomes`, :mod:`.metrics`), and
returns an :class:`ExperimentResult` (:mod:`.results`) that :mod:`.storage` saves in the
store's ``experiments`` / ``experiment_runs`` tables and :mod:`.report` prints beside the
study's numbers. Everything that fixes the numbers is one :class:`ExperimentConfig`.

The names below load on first use (:mod:`toolwatch.lazy`): ``saved_runs`` (what ``experiment``
and ``replay`` check before they run) needs no scorer, numpy or Arrow.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from toolwatch.lazy import lazy_names

if TYPE_CHECKING:
    from toolwatch.injection.experiment.config import ExperimentConfig, ExperimentError
    from toolwatch.injection.experiment.protocol import run_experiment, run_with_progress
    from toolwatch.injection.experiment.results import ExperimentResult
    from toolwatch.injection.experiment.storage import load_calls, save_result

__all__ = [
    "ExperimentConfig",
    "ExperimentError",
    "ExperimentResult",
    "load_calls",
    "run_experiment",
    "run_with_progress",
    "save_result",
]
__getattr__ = lazy_names(
    __name__,
    {
        "ExperimentConfig": "toolwatch.injection.experiment.config",
        "ExperimentError": "toolwatch.injection.experiment.config",
        "ExperimentResult": "toolwatch.injection.experiment.results",
        "load_calls": "toolwatch.injection.experiment.storage",
        "run_experiment": "toolwatch.injection.experiment.protocol",
        "run_with_progress": "toolwatch.injection.experiment.protocol",
        "save_result": "toolwatch.injection.experiment.storage",
    },
)
