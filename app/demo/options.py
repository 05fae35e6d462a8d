"""What the demo is asked to do and what it reports: sizes (full and quick), the files it writes in
its store, the stage names, its console, its result and its one error type.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from toolwatch import study
from toolwatch.detection.model.location import MODEL_IN_STORE

#: File that marks a directory as a demo store (so that a later demo may wipe it).
MARKER: Final = "toolwatch-demo.json"
DEFAULT_STORE: Final = "toolwatch-demo"
#: Where the app looks for a store's own model, so ``toolwatch app --store`` finds it.
MODEL_FILE: Final = MODEL_IN_STORE
SCENARIO_FILE: Final = Path("demo") / "scenario.json"
REPORT_FILE: Final = Path("demo") / "experiment.txt"
SERVICE: Final = "toolwatch-demo-agent"
STAGES: Final[tuple[str, ...]] = (
    "simulate",
    "train",
    "experiment",
    "live",
    "exfiltration",
    "dashboard",
)
#: Sizes of a full and of a ``--quick`` demo (explicit options override either).
FULL: Final[dict[str, int]] = {
    "sessions": int(study.CORPUS["sessions"]),
    "seeds": 5,
    "bootstrap": 2000,
    "retries": 15,
}
QUICK: Final[dict[str, int]] = {"sessions": 150, "seeds": 1, "bootstrap": 200, "retries": 8}
TABLE_DIR: Final = re.compile(r"^[a-z][a-z0-9_]*$")

Emit = Callable[[str], None]


class DemoError(Exception):
    """A stage failed; ``stage`` names it and the message says why."""

    def __init__(self, stage: str, message: str) -> None:
        super().__init__(message)
        self.stage = stage


@dataclass(frozen=True)
class DemoOptions:
    """Everything that determines a demo run."""

    store: Path = Path(DEFAULT_STORE)
    sessions: int = FULL["sessions"]
    seeds: int = FULL["seeds"]
    bootstrap: int = FULL["bootstrap"]
    seed: int = 0
    retries: int = FULL["retries"]

    def __post_init__(self) -> None:
        for name, low in (("sessions", 4), ("seeds", 1), ("bootstrap", 1), ("retries", 1)):
            if getattr(self, name) < low:
                raise DemoError("options", f"--{name} must be at least {low}")
        if self.seed < 0:
            raise DemoError("options", "--seed must be >= 0")


@dataclass
class LiveOutcome:
    """What the live stage saw: per run its calls, and the alerts the collector raised."""

    runs: dict[str, Any]  # run name -> AgentRun
    alerts: list[dict[str, Any]]
    peaks: dict[str, float]  # session -> peak of the alerting statistic (batch re-score)
    threshold: float
    statistic: str
    collector_url: str


@dataclass
class ExfilOutcome:
    """What the exfiltration stage saw: the obeying run and its provenance alerts."""

    run: Any  # AgentRun
    alerts: list[dict[str, Any]]


@dataclass
class DemoResult:
    options: DemoOptions
    timings: dict[str, float] = field(default_factory=dict)
    model_path: Path | None = None
    experiment_run: str | None = None
    live: LiveOutcome | None = None
    exfiltration: ExfilOutcome | None = None


class Console:
    """Thread-safe line output (the collector's callback thread prints alerts)."""

    def __init__(self, emit: Emit | None = None) -> None:
        self._emit = emit or (lambda line: print(line, flush=True))
        self._lock = threading.Lock()

    def __call__(self, line: str = "") -> None:
        with self._lock:
            self._emit(line)
