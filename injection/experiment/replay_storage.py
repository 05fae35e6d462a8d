"""A replay in a store: the ``replays`` rows of a result, saving them, and reading a saved run
back as the very summary :func:`~.replay_report.summary` made of it — so the dashboard's
Replay page shows what ``toolwatch replay`` printed for that run — and its configuration
(``toolwatch replay --rerun``).

As ``toolwatch experiment`` does, every run is added under its own run id (a re-run of the same
configuration is a new run beside the old one); the configuration with every knob resolved, the
seeds and the split with its data fingerprint are on every row.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import UTC, date, datetime
from typing import Any, Final

import pyarrow as pa

from toolwatch import tables
from toolwatch.collector.store.arrow_schema import SCHEMAS
from toolwatch.injection.experiment.config import ExperimentError
from toolwatch.injection.experiment.replay import MODELS, ReplayConfig, ReplayResult
from toolwatch.injection.experiment.replay_report import summary
from toolwatch.injection.experiment.results import NORMAL
from toolwatch.injection.experiment.storage import saved_config

REPLAYS: Final = tables.REPLAYS.name
REPLAYS_SCHEMA: Final = SCHEMAS[REPLAYS]


def replay_rows(data: Mapping[str, Any]) -> pa.Table:
    """The ``replays`` rows of a replay's summary: per model, week and kind (``normal``: the
    week's normal long streams, detected = alarmed)."""
    config = data["config"]
    fixed = {
        "run_id": data["run_id"],
        "created": datetime.fromisoformat(data["created"]),
        "statistic": config["statistic"],
        "fa_target": float(config["experiment"]["target_fa"]),
        "split_json": json.dumps(data["split"], sort_keys=True),
        "config_json": json.dumps(config, sort_keys=True),
        "seeds": ",".join(str(s) for s in config["experiment"]["seeds"]),
    }
    rows: list[dict[str, Any]] = []
    for model, totals in data["totals"].items():
        totals_json = json.dumps(totals)
        for w in data["weeks"]:
            week = {
                **fixed,
                "model": model,
                "week": date.fromisoformat(w["week"]),
                "thin": bool(w["thin"]),
                "threshold": w["threshold"][model],
                "totals_json": totals_json,
            }
            rows.append(
                {**week, "kind": NORMAL, "runs": w["streams"], "detected": w["alarmed"][model]}
            )
            for kind, (hits, runs) in w["detection"][model].items():
                rows.append({**week, "kind": kind, "runs": runs, "detected": hits})
    return pa.Table.from_pylist(rows, schema=REPLAYS_SCHEMA)


def save_replay(store: Any, result: ReplayResult) -> list[Any]:
    """Add a replay to ``store`` (a :class:`~toolwatch.collector.store.parquet_store.Store`)."""
    rows = replay_rows(summary(result))
    return list(store.append(REPLAYS, rows, schema=REPLAYS_SCHEMA, partition_by="created"))


def summary_from_rows(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The summary of one saved run from its ``replays`` rows (any order), as
    :func:`~.replay_report.summary` made it (JSON types: lists, not tuples)."""
    if not rows:
        raise ExperimentError("no rows of that replay")
    first = rows[0]
    config = json.loads(first["config_json"])
    order = {k: i for i, k in enumerate(config["replay_kinds"])}
    models = [m for m in MODELS if any(r["model"] == m for r in rows)]
    by_week: dict[str, list[Mapping[str, Any]]] = {}
    for r in rows:
        by_week.setdefault(r["week"].isoformat(), []).append(r)
    weeks = []
    for week in sorted(by_week):
        found = by_week[week]
        normal = {r["model"]: r for r in found if r["kind"] == NORMAL}
        injected = sorted(
            (r for r in found if r["kind"] != NORMAL),
            key=lambda r: (order.get(r["kind"], len(order)), r["kind"]),
        )
        weeks.append(
            {
                "week": week,
                "streams": int(normal[models[0]]["runs"]),
                "thin": bool(normal[models[0]]["thin"]),
                "alarmed": {m: int(normal[m]["detected"]) for m in models},
                "threshold": {m: normal[m]["threshold"] for m in models},
                "detection": {
                    m: {
                        r["kind"]: [int(r["detected"]), int(r["runs"])]
                        for r in injected
                        if r["model"] == m
                    }
                    for m in models
                },
            }
        )
    totals = {
        m: json.loads(next(r for r in rows if r["model"] == m)["totals_json"]) for m in models
    }
    return {
        "run_id": first["run_id"],
        "created": first["created"].astimezone(UTC).isoformat(),
        "config": config,
        "split": json.loads(first["split_json"]),
        "weeks": weeks,
        "totals": totals,
    }


def load_replay(store: Any, run_id: str) -> dict[str, Any]:
    """A saved replay's summary (what :func:`~.replay_report.render` prints)."""
    if REPLAYS not in store.tables():
        raise ExperimentError(f"the store {store.root} holds no saved replays")
    table = store.query(f"SELECT * FROM {REPLAYS} WHERE run_id = ?", [run_id])
    if table.num_rows == 0:
        raise ExperimentError(f"no saved replay with run id {run_id!r} in {store.root}")
    return summary_from_rows(table.to_pylist())


def load_replay_run(store: Any, run_id: str) -> tuple[ReplayConfig, dict[str, Any]]:
    """The configuration and the split summary (with its data fingerprint) of a saved run."""
    data = load_replay(store, run_id)
    config = saved_config(
        "replay", run_id, store.root, lambda: ReplayConfig.from_dict(data["config"])
    )
    return config, data["split"]
