"""The dashboard's test store, built the way a user builds one (see tests/app/conftest.py)."""

from __future__ import annotations

import contextlib
import io
import json
import re
import subprocess
import sys
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
from streamlit.testing.v1 import AppTest

from support.paths import REPO
from toolwatch.app.dashboard.settings import MODEL_IN_STORE
from toolwatch.cli import main as cli_main
from toolwatch.collector.sources.simulator import simulate
from toolwatch.collector.store.parquet_store import Store
from toolwatch.detection import ModelConfig, NormalModel
from toolwatch.detection.alerting.live import LiveScorer
from toolwatch.detection.calls.windows import bounded, default_windows, load_window
from toolwatch.detection.scoring.batch import score_calls
from toolwatch.detection.scoring.stream_scores import STREAM_SCORES_TABLE, stream_scores
from toolwatch.injection.experiment import (
    ExperimentConfig,
    load_calls,
    run_experiment,
    save_result,
)
from toolwatch.injection.experiment.formats import percent

SCENARIOS = REPO / "scenarios"
WB_SCENARIOS = ("c1-support-01", "a2-hr-01")
KINDS = ("burst", "runaway_retry", "sequence_hijack", "control_same_response_burst")
#: The injected kinds of the replays the tests save (short names in the report: burst, runaway).
REPLAY_KINDS = ("burst", "runaway_retry")


def build_store(root: Path, sessions: int = 80) -> dict[str, Any]:
    """A store with calls, a model at the store's convention, experiment results, live alerts
    and a workbench suite (see the module docstring)."""
    store = Store(root)
    store.append("calls", simulate(seed=3, sessions=sessions))
    train_w, cal_w = default_windows(store)
    model = NormalModel.fit(load_window(store, train_w), ModelConfig(), window=train_w.describe())
    model.calibrate(load_window(store, cal_w), window=cal_w.describe())
    model_path = model.save(root / MODEL_IN_STORE)
    config = ExperimentConfig(
        split_shares=(0.5, 0.15), seeds=(0, 1), bootstrap=200, kinds=KINDS, ablation=True
    )
    result = run_experiment(load_calls(store), config)
    save_result(store, result)
    later = store.query(
        "SELECT * EXCLUDE (date) FROM calls WHERE start_time >= ? ORDER BY start_time",
        [cal_w.end],
    )
    with LiveScorer(model_path, store) as live:
        alerts = live.process(later)
    assert alerts, "the fixture needs live alerts"
    suite = subprocess.run(
        [
            sys.executable,
            "-m",
            "toolwatch",
            "workbench",
            "suite",
            "--store",
            str(root),
            "--agents",
            "naive,careful",
            "--mitigations",
            "scan,all",
            "--scenarios",
            *(str(SCENARIOS / f"{s}.json") for s in WB_SCENARIOS),
        ],
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert suite.returncode == 0, suite.stderr[-2000:]
    # what `toolwatch scan` stores for the Sessions page: every stream's peak
    every = load_window(store, bounded(None, None), normal_only=False)
    store.append(STREAM_SCORES_TABLE, stream_scores(model, score_calls(model, every)))
    return {"root": root, "model": model, "model_path": model_path, "run_id": result.run_id}


def rows(root: Path, sql: str, params: list[Any] | None = None) -> list[dict[str, Any]]:
    return Store(root).query(sql, params).to_pylist()


def pct0(x: float) -> str:
    return f"{percent(x)}%"


def interval(rate: float, lo: float, hi: float) -> str:
    return f"{pct0(rate)} ({percent(lo)}–{percent(hi)})"


def printed(*args: str) -> str:
    """What ``toolwatch ARGS`` prints on stdout (it must succeed)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        assert cli_main(list(args)) == 0, args
    return out.getvalue()


def printed_stats(root: Path, source: str | None = None) -> dict[str, Any]:
    """What ``toolwatch stats --json`` prints for ``root`` (one ``source``, or all)."""
    out = io.StringIO()
    picked = ["--source", source] if source else []
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        assert cli_main(["stats", "--store", str(root), "--json", *picked]) == 0
    return dict(json.loads(out.getvalue()))


def printed_facts(root: Path, source: str | None = None) -> list[str]:
    """The "yours" column of the table ``toolwatch stats`` prints, top to bottom."""
    out = io.StringIO()
    picked = ["--source", source] if source else []
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        assert cli_main(["stats", "--store", str(root), *picked]) == 0
    lines = out.getvalue().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("─"))
    table = [line for line in lines[start + 1 :] if re.search(r"\S {2,}\S", line)]
    return [re.split(r" {2,}", line.strip())[-2] for line in table]


# ------------------------------------------------------------------------------ replay


def run_replay(root: Path, *extra: str) -> tuple[str, str]:
    """Run ``toolwatch replay`` on ``root``: (its printed text, the run id it saved)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        code = cli_main(
            [
                "replay",
                "--store",
                str(root),
                "--split-shares",
                "0.44,0.07",
                "--seeds",
                "1",
                "--kinds",
                ",".join(REPLAY_KINDS),
                *extra,
            ]
        )
    assert code == 0
    text = out.getvalue()
    found = re.search(r"^saved as run (\w+) ", text, re.M)
    assert found
    return text, found.group(1)


def printed_weeks(text: str) -> dict[str, list[str]]:
    """The CLI's weekly table: first cell (week, ``thin`` and all) -> its cells."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("week "))
    found = {}
    for line in lines[start + 2 :]:
        if not line.strip():
            break
        cells = re.split(r" {2,}", line.strip())
        found[cells[0]] = cells
    return found


# ------------------------------------------------------------------------------ AppTest


def frame_with(at: AppTest, column: str, index: str | None = None) -> pd.DataFrame:
    """The first of the app's HTML tables (:func:`shown_tables`; every table of the app is
    one) with ``column``, indexed by ``index``."""
    for value in [t.frame for t in shown_tables(at).values()]:
        if column in value.columns:
            return value.set_index(index) if index else value
    raise AssertionError(f"no table with a {column!r} column")


@dataclass
class ShownTable:
    """A responsive table (``toolwatch.app.dashboard.html_table``) as drawn: its cells' text
    under the frame's own column names (``data-col``), and each row's link (or None)."""

    frame: pd.DataFrame
    links: list[str | None] = field(default_factory=list)


class _TableReader(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.found: dict[str, tuple[list[str], list[list[str]], list[str | None]]] = {}
        self.key: str | None = None
        self.cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        classes = (a.get("class") or "").split()
        if tag == "div" and "tw-table" in classes:
            self.key = next(c[9:] for c in classes if c.startswith("tw-table-"))
            self.found[self.key] = ([], [], [])
        elif self.key is None:
            return
        elif tag == "th":
            self.found[self.key][0].append(a.get("data-col") or "")
        elif tag == "tr" and self.found[self.key][0]:
            self.found[self.key][1].append([])
            self.found[self.key][2].append(None)
        elif tag == "td":
            self.cell = []
        elif tag == "a" and self.cell is not None:
            self.found[self.key][2][-1] = a.get("href")

    def handle_data(self, data: str) -> None:
        if self.cell is not None:
            self.cell.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag == "td" and self.key is not None and self.cell is not None:
            self.found[self.key][1][-1].append("".join(self.cell))
            self.cell = None
        elif tag == "table":
            self.key = None


def shown_tables(at: AppTest) -> dict[str, ShownTable]:
    """Every responsive table the page drew, by key (``.tw-table-KEY``)."""
    reader = _TableReader()
    for element in at.get("html"):
        reader.feed(element.proto.body)  # type: ignore[attr-defined]
    return {
        key: ShownTable(pd.DataFrame(body, columns=head), links)
        for key, (head, body, links) in reader.found.items()
    }


def metric(at: AppTest, name: str) -> str:
    return next(str(m.value) for m in at.metric if m.label == name)


def chart_data(at: AppTest, column: str, index: int | None = None) -> pd.DataFrame:
    """The dataset holding ``column`` of the ``index``-th chart (default: the first chart
    that has one)."""
    charts = at.get("vega_lite_chart")
    chosen = charts if index is None else [charts[index]]
    for element in chosen:
        for dataset in element.proto.datasets:  # type: ignore[attr-defined]
            table = pa.ipc.open_stream(dataset.data.data).read_all()
            if column in table.column_names:
                return table.to_pandas()
        # specs drawn by ui.chart carry their data inline (JSON rows)
        inline = json.loads(element.proto.spec).get("datasets", {})  # type: ignore[attr-defined]
        for values in inline.values():
            found = pd.DataFrame(values)
            if column in found.columns:
                return found
    raise AssertionError(f"no chart with a {column!r} column")
