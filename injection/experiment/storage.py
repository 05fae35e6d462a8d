"""An experiment in a store: the ``experiments`` and ``experiment_runs`` rows of a result,
saving them, loading a saved run's configuration (to re-run it) and the calls to run on.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any, Final, TypeVar

import numpy as np
import pyarrow as pa

from toolwatch import tables
from toolwatch.collector.store.arrow_schema import SCHEMAS
from toolwatch.collector.store.parquet_store import CALLS, PARTITION_COLUMN
from toolwatch.injection.experiment.config import ExperimentConfig, ExperimentError
from toolwatch.injection.experiment.results import ExperimentResult, finite
from toolwatch.usage import UserError
from toolwatch.words import counted

EXPERIMENTS: Final = tables.EXPERIMENTS.name
EXPERIMENT_RUNS: Final = tables.EXPERIMENT_RUNS.name
EXPERIMENTS_SCHEMA: Final = SCHEMAS[EXPERIMENTS]
EXPERIMENT_RUNS_SCHEMA: Final = SCHEMAS[EXPERIMENT_RUNS]
_TS = EXPERIMENTS_SCHEMA.field("created").type
_Config = TypeVar("_Config")


def experiment_rows(result: ExperimentResult) -> pa.Table:
    """The ``experiments`` rows of a result (config and seeds on every row)."""
    n = len(result.cells)
    config_json = result.config.to_json()
    split_json = json.dumps(result.split, sort_keys=True)
    seeds = ",".join(str(s) for s in result.config.seeds)
    cols: dict[str, list[Any]] = {name: [] for name in EXPERIMENTS_SCHEMA.names}
    for c in result.cells:
        cols["variant"].append(c.variant)
        cols["kind"].append(c.kind)
        cols["cue_set"].append(c.cue_set)
        cols["detector"].append(c.detector)
        cols["threshold_mode"].append(c.mode)
        for name in (
            "threshold",
            "fa_reached",
            "rate",
            "ci_low",
            "ci_high",
            "median_latency",
            "auc",
        ):
            cols[name].append(finite(float(getattr(c, name))))
        cols["runs"].append(c.runs)
        cols["detected"].append(c.detected)
        cols["notes_json"].append(json.dumps(result.notes.get(c.kind, {}), sort_keys=True))
    cols["run_id"] = [result.run_id] * n
    cols["created"] = [result.created] * n
    cols["fa_target"] = [result.config.target_fa] * n
    cols["normal_sessions"] = [int(result.split["test"][0])] * n
    cols["split_json"] = [split_json] * n
    cols["config_json"] = [config_json] * n
    cols["seeds"] = [seeds] * n
    return pa.table(
        {k: pa.array(v, EXPERIMENTS_SCHEMA.field(k).type) for k, v in cols.items()},
        schema=EXPERIMENTS_SCHEMA,
    )


def run_rows(result: ExperimentResult) -> pa.Table:
    """The ``experiment_runs`` rows: per-session outcomes (built column-wise, it is large)."""
    parts: list[pa.Table] = []
    for out in result.runs:
        n = len(out.session_ids)
        if n == 0:
            continue
        sid = pa.array(out.session_ids, pa.string())
        agents = pa.array(out.agent_ids, pa.string())
        streams = pa.array(out.streams, pa.int64())
        notes = pa.array([x or None for x in out.notes], pa.string())
        for (cue, det, mode), det_flags in out.detected.items():
            lat = out.latency[(cue, det, mode)]
            parts.append(
                pa.table(
                    {
                        "run_id": pa.array([result.run_id] * n, pa.string()),
                        "created": pa.array([result.created] * n, _TS),
                        "variant": pa.array([out.variant] * n, pa.string()),
                        "kind": pa.array([out.kind] * n, pa.string()),
                        "seed": pa.array(out.seed, pa.int64()),
                        "session_id": sid,
                        "agent_id": agents,
                        "stream_index": streams,
                        "position": pa.array(out.positions, pa.int64()),
                        "inserted": pa.array(out.inserted, pa.int64()),
                        "note": notes,
                        "cue_set": pa.array([cue] * n, pa.string()),
                        "detector": pa.array([det] * n, pa.string()),
                        "threshold_mode": pa.array([mode] * n, pa.string()),
                        "detected": pa.array(det_flags, pa.bool_()),
                        "latency": pa.array(lat, pa.int64(), mask=~det_flags | (lat <= 0)),
                        "window_max": pa.array(
                            out.window_max.get((cue, det), np.full(n, np.nan)), pa.float64()
                        ),
                    },
                    schema=EXPERIMENT_RUNS_SCHEMA,
                )
            )
    if not parts:
        return EXPERIMENT_RUNS_SCHEMA.empty_table()
    return pa.concat_tables(parts)


def save_result(store: Any, result: ExperimentResult, *, runs: bool = True) -> list[Any]:
    """Append a result to ``store`` (a :class:`~toolwatch.collector.store.parquet_store.Store`)."""
    files = store.append(
        EXPERIMENTS, experiment_rows(result), schema=EXPERIMENTS_SCHEMA, partition_by="created"
    )
    if runs:
        files += store.append(
            EXPERIMENT_RUNS,
            run_rows(result),
            schema=EXPERIMENT_RUNS_SCHEMA,
            partition_by="created",
        )
    return list(files)


def load_calls(store: Any) -> pa.Table:
    """Every call of a store (any source: collected, imported or simulated)."""
    table = store.query(f"SELECT * EXCLUDE ({PARTITION_COLUMN}) FROM {CALLS}")
    if table.num_rows == 0:
        raise ExperimentError(
            f"the store {store.root} holds no calls: collect, import or simulate some first "
            "(e.g. `toolwatch simulate`)"
        )
    return table


def load_config(store: Any, run_id: str) -> ExperimentConfig:
    """The exact configuration of a saved run (to re-run it)."""
    return load_run(store, run_id)[0]


def load_run(store: Any, run_id: str) -> tuple[ExperimentConfig, dict[str, Any]]:
    """The configuration and the split summary (with its data fingerprint) of a saved run."""
    sql = f"SELECT config_json, split_json FROM {EXPERIMENTS} WHERE run_id = ? LIMIT 1"
    if EXPERIMENTS not in store.tables():
        raise ExperimentError(f"the store {store.root} holds no saved experiments")
    table = store.query(sql, [run_id])
    if table.num_rows == 0:
        raise ExperimentError(f"no saved experiment with run id {run_id!r} in {store.root}")
    row = table.to_pylist()[0]
    config = saved_config(
        "experiment",
        run_id,
        store.root,
        lambda: ExperimentConfig.from_dict(json.loads(row["config_json"])),
    )
    return config, json.loads(row["split_json"])


def saved_config(kind: str, run_id: str, root: Any, build: Callable[[], _Config]) -> _Config:
    """``build()``, the configuration of a saved run (``--rerun``): settings that no longer
    validate (a row edited by hand, or written by another version) are data the command cannot
    use, exit 1, said naming the run, not the exit 2 of options the user typed."""
    try:
        return build()
    except (UserError, ValueError, TypeError, KeyError) as exc:
        why = f"no setting {exc.args[0]!r}" if isinstance(exc, KeyError) else str(exc)
        raise ExperimentError(
            f"the saved {kind} {run_id!r} in {root} has settings this version cannot use: {why}"
        ) from exc


def data_changed(saved_split: Mapping[str, Any], split: Mapping[str, Any]) -> str | None:
    """Why a re-run's data (its split summary) differ from the saved run's (``None`` when they
    are the same); the experiment's and the replay's re-runs alike."""
    then, now = saved_split.get("data"), split.get("data")
    if then is None or now is None or then == now:
        return None
    return (
        f"{counted(then['streams'], 'stream')} / {counted(then['calls'], 'call')} then, "
        f"{now['streams']:,} / {now['calls']:,} now"
        + (
            ""
            if (then["streams"], then["calls"]) != (now["streams"], now["calls"])
            else ", same counts, other calls"
        )
    )
