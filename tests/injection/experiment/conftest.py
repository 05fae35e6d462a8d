"""Shared by the experiment's tests: the simulated corpus and the study's protocol on it."""

from __future__ import annotations

import pyarrow as pa
import pytest

from toolwatch.collector.sources.simulator import simulate
from toolwatch.injection.experiment.config import ExperimentConfig
from toolwatch.injection.experiment.protocol import run_experiment
from toolwatch.injection.experiment.results import ExperimentResult


@pytest.fixture(scope="session")
def corpus() -> pa.Table:
    return simulate(seed=0)


@pytest.fixture(scope="session")
def result(corpus: pa.Table) -> ExperimentResult:
    """The study's protocol on the simulated corpus, reduced to one seed."""
    return run_experiment(corpus, ExperimentConfig(seeds=(0,), bootstrap=200))
