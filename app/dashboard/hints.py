"""The commands the dashboard's pages offer: how to fill each part of the store, and an
``experiment`` command that works on this store's calls. Every command names the store as one
shell word (:func:`store_arg`)."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Final

import duckdb

from toolwatch import study
from toolwatch.collector.store.parquet_store import CALLS
from toolwatch.detection.alerting.alerts import ALERTS_TABLE as ALERTS
from toolwatch.detection.calls.split import split_streams
from toolwatch.detection.calls.split_options import SplitError, SplitSpec
from toolwatch.detection.model.location import MODEL_IN_STORE
from toolwatch.injection.experiment.config import ExperimentConfig
from toolwatch.injection.experiment.replay_storage import REPLAYS
from toolwatch.injection.experiment.storage import EXPERIMENTS
from toolwatch.injection.workbench.report import RUNS_TABLE as WORKBENCH_RUNS


def store_arg(store: Path) -> str:
    """``store`` as a shell word, for the commands the pages offer (a path with a space or a
    quote stays one argument)."""
    return shlex.quote(str(store))


#: How to fill each part of the store (shown on empty pages); ``STORE`` stands for its path.
FILL_HINTS: Final[dict[str, str]] = {
    CALLS: (
        "`toolwatch simulate --store STORE` (a simulated corpus shaped like the study's), "
        "`toolwatch import claude-code ~/.claude/projects --store STORE` (your own transcripts), "
        "or `toolwatch collector --store STORE` receiving OTLP spans from instrumented agents"
    ),
    EXPERIMENTS: (
        "`toolwatch experiment --store STORE` (the study's injection experiment on the "
        "store's calls)"
    ),
    REPLAYS: (
        "`toolwatch replay --store STORE` (the store's test split through the live scorer, "
        "week by week: the false alarms alerts would give)"
    ),
    ALERTS: (
        "`toolwatch train --store STORE`, then `toolwatch collector --store STORE --model "
        f"STORE/{MODEL_IN_STORE}`: it scores every call as it arrives and records an alert "
        "whenever a stream crosses the operating point"
    ),
    WORKBENCH_RUNS: (
        "`toolwatch workbench suite --store STORE` (every scenario × agent, clean / faulted / "
        "mitigated) or `toolwatch workbench run SCENARIO --store STORE --mitigation all`"
    ),
    "demo": (
        "`toolwatch demo --store STORE` fills an empty store with calls, a model, the "
        "experiment and a live alert in one go; add `toolwatch workbench suite --store STORE` "
        "for the Workbench page."
    ),
}


#: What each command that splits the store does, as its hint says it: on the default split,
#: on the study's shares of the streams.
SPLIT_COMMANDS: Final[dict[str, tuple[str, str]]] = {
    "experiment": (
        "the study's injection experiment on the store's calls, split by time in the study's "
        "proportions of its days",
        "the study's injection experiment; the store's streams split by time in the study's "
        "proportions",
    ),
    "replay": (
        "the store's test split through the live scorer, week by week; split by time in the "
        "study's proportions of its days",
        "the store's test split through the live scorer, week by week; its streams split by "
        "time in the study's proportions",
    ),
}


def experiment_hint(
    con: duckdb.DuckDBPyConnection, store: Path, command: str = "experiment"
) -> str:
    """How to fill the store with experiment results, to follow "Fill it with": a
    ``toolwatch experiment`` command that works on this store's calls — the default split (the
    study's proportions of the store's own days, :mod:`toolwatch.detection.calls.split`) when it
    leaves test streams long enough, else the study's shares of the streams
    (``--split-shares``) when those do — or, when neither split can run, more calls first and
    why (the split's own reason)."""
    config = ExperimentConfig()
    where = store_arg(store)
    shares = (
        round(study.SPLITS["train"][0] / study.CORPUS["sessions"], 2),
        round(study.SPLITS["calibration"][0] / study.CORPUS["sessions"], 2),
    )
    by_days, by_shares = SPLIT_COMMANDS[command]
    tries = (
        (config.split_spec(), "", by_days),
        (
            SplitSpec(shares=shares, min_calls=config.min_calls),
            f" --split-shares {shares[0]:.2f},{shares[1]:.2f}",
            by_shares,
        ),
    )
    # the experiment's own streams: the whole store (not the page's time range), uninjected
    quirk = (
        "max(client_quirk)"
        if "client_quirk" in con.sql("SELECT * FROM memory.main.calls LIMIT 0").columns
        else "NULL"
    )
    table = con.sql(
        f"SELECT session_id, agent_id, epoch_us(min(start_time)) AS first, count(*) AS calls, "
        f"{quirk} AS quirk FROM memory.main.calls GROUP BY session_id, agent_id "
        "HAVING count(label) = 0"
    ).to_arrow_table()
    reason = "the store holds no (uninjected) calls"
    for spec, options, what in tries:
        try:
            split_streams(
                table.column("first").to_numpy(),
                table.column("session_id").to_pylist(),
                table.column("agent_id").to_pylist(),
                table.column("calls").to_numpy(),
                table.column("quirk").to_pylist(),
                spec,
            )
        except SplitError as exc:
            reason = str(exc)
            continue
        return f"`toolwatch {command} --store {where}{options}` ({what})"
    return (
        f"more calls first — no {command} can run on this store's calls yet, even split by the "
        f"study's shares of its streams: {reason.split('; ')[0]}; "
        f"`toolwatch simulate --store {where}` adds a corpus shaped like the study's, then "
        f"`toolwatch {command} --store {where}` runs on it"
    )
