"""What a simulated corpus is made of and how its rows say so: the configuration, the labels
(source, service, id prefixes) and the study's calendar scaled to any number of days.

:class:`SimulationConfig` is saved beside every corpus written (the ``simulations`` table), so a
corpus can be rebuilt from its row.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any, Final

from toolwatch import study
from toolwatch.words import counted

SOURCE: Final = "simulated"
SERVICE: Final = "toolwatch-simulator"
SESSION_PREFIX: Final = "sim-"
RESPONSE_PREFIX: Final = "msg_sim_"
CALL_PREFIX: Final = "toolu_sim_"

#: The refusal the study's retry-loop subagent ignored (only its byte size is used).
REFUSAL_TEXT: Final = "Concurrent subagent limit reached. Do not retry."
#: The retry loop's tool: the subagent tried to start a subagent of its own.
RETRY_TOOL: Final = "Agent"

SPLIT_NAMES: Final = study.SPLIT_NAMES
STUDY_DAYS: Final = sum(study.SPLIT_DAYS)
#: The client upgrade (tool renames) and the retry loop, as offsets into a 42-day corpus.
UPGRADE_DAY: Final = 34  # 2026-09-07
RUNAWAY_OFFSET: Final = timedelta(days=34, hours=8)  # 2026-09-07 08:00 UTC
DAY_US: Final = 86_400_000_000


def as_date(value: date | str) -> date:
    if isinstance(value, datetime):
        return value.date()
    if isinstance(value, date):
        return value
    try:
        return date.fromisoformat(value)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"start must be an ISO date (YYYY-MM-DD), got {value!r}") from exc


def day_us(d: date) -> int:
    return int(datetime(d.year, d.month, d.day, tzinfo=UTC).timestamp()) * 1_000_000


def split_dates(
    start: date | str = study.CORPUS_START, days: int = STUDY_DAYS
) -> dict[str, tuple[date, date]]:
    """First and last day (inclusive) of each split, scaled from the study's 21/7/14 days."""
    first = as_date(start)
    if days < 3:
        raise ValueError(f"days must be at least 3 (one per split), got {days}")
    train = max(1, round(days * study.SPLIT_DAYS[0] / STUDY_DAYS))
    calibration = max(1, round(days * study.SPLIT_DAYS[1] / STUDY_DAYS))
    if train + calibration >= days:
        train, calibration = days - 2, 1
    out: dict[str, tuple[date, date]] = {}
    day = first
    try:
        for name, n in zip(
            SPLIT_NAMES, (train, calibration, days - train - calibration), strict=True
        ):
            out[name] = (day, day + timedelta(days=n - 1))
            day += timedelta(days=n)
    except OverflowError:
        raise ValueError(f"{counted(days, 'day')} from {first} run past the year 9999") from None
    return out


#: The study's default split dates (inclusive ISO days); a session belongs to the split of its
#: first call. Test-window sessions with fewer than ``study.TEST_MIN_CALLS`` calls are not in
#: the study's test split.
SPLIT_DATES: Final[dict[str, tuple[str, str]]] = {
    name: (a.isoformat(), b.isoformat()) for name, (a, b) in split_dates().items()
}


#: The largest seed (it is stored beside the corpus as a 64-bit integer).
MAX_SEED: Final = 2**63 - 1


@dataclass(frozen=True)
class SimulationConfig:
    """Everything that determines a simulated corpus (saved beside it so it can be rebuilt)."""

    seed: int = 0
    sessions: int = int(study.CORPUS["sessions"])
    start: str = study.CORPUS_START
    days: int = int(study.CORPUS["days"])
    #: retries of the refused ``Agent`` call in the retry-loop subagent; 0 = no such session
    runaway_retries: int = 32

    def __post_init__(self) -> None:
        if self.sessions < 4:
            raise ValueError(
                f"sessions must be at least 4 (one per split group), got {self.sessions}"
            )
        if self.runaway_retries < 0:
            raise ValueError(f"runaway_retries must be >= 0, got {self.runaway_retries}")
        if not 0 <= self.seed <= MAX_SEED:
            raise ValueError(f"seed must be from 0 to {MAX_SEED}, got {self.seed}")
        split_dates(self.start, self.days)

    @classmethod
    def scaled(cls, scale: float, **kwargs: Any) -> SimulationConfig:
        """A corpus ``scale`` times the study's (same shape and split proportions)."""
        if not scale > 0:
            raise ValueError(f"scale must be positive, got {scale}")
        return cls(sessions=max(4, round(study.CORPUS["sessions"] * scale)), **kwargs)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)
