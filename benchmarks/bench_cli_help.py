"""Benchmark: the wall time of ``toolwatch CMD --help``, before and after its heavy imports
moved into the command's ``run``.

For each command whose imports moved, in fresh interpreters (best of ``--repeat``): the after is
``--help`` as it is; the before imports first the modules the command now imports only when it
runs (``MOVED``: what its ``--help`` loaded until then: the scorer with scipy and river, DuckDB,
Arrow, the OTLP server with uvicorn, the MCP SDK, pydantic), then asks for ``--help``. Both are
printed in seconds with the before/after ratio, beside a bare ``import toolwatch.cli`` (the
floor). No target is set: the test that holds ``--help`` to its options is
``tests/repo/test_repo_contract.py``.

Run: ``.venv/bin/python benchmarks/bench_cli_help.py [--repeat 5]``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from toolwatch.usage import positive_int

sys.path.insert(0, str(Path(__file__).resolve().parent))  # targets: the shared convention
from targets import command_line

#: command -> the modules its ``run`` imports that its ``--help`` imported before the change
MOVED: dict[str, tuple[str, ...]] = {
    "store": (
        "tqdm",
        "pyarrow",
        "toolwatch.collector.otlp.ingest",
        "toolwatch.collector.sources.stale_flags",
        "toolwatch.collector.store.parquet_store",
        "toolwatch.collector.store.result_formats",
    ),
    "sql": (
        "duckdb",
        "toolwatch.collector.store.parquet_store",
        "toolwatch.collector.store.read_only",
        "toolwatch.collector.store.result_formats",
    ),
    "stats": ("toolwatch.collector.stats", "toolwatch.collector.stats.report"),
    "simulate": (
        "toolwatch.collector.sources.delivery",
        "toolwatch.collector.sources.simulator",
        "toolwatch.instrumentation.export.otlp",
    ),
    "score": (
        "tqdm",
        "numpy",
        "pyarrow.parquet",
        "toolwatch.collector.store.result_formats",
        "toolwatch.detection.calls.windows",
        "toolwatch.detection.model.normal_model",
        "toolwatch.detection.scoring.batch",
    ),
    "scan": (
        "tqdm",
        "toolwatch.collector.stats.corpus",
        "toolwatch.collector.store.result_formats",
        "toolwatch.detection.scoring.batch",
        "toolwatch.detection.scoring.scan",
        "toolwatch.detection.scoring.stream_scores",
        "toolwatch.detection.calls.split",
        "toolwatch.detection.model.normal_model",
    ),
    "workbench": (
        "toolwatch.collector.store.parquet_store",
        "toolwatch.detection.model.config",
        "toolwatch.injection.workbench.detect",
        "toolwatch.injection.workbench.live_detect",
        # the third round: the agents, the suite, the reports and the library (mcp, Arrow)
        "toolwatch.injection.faults.library",
        "toolwatch.injection.workbench.suite",
        "toolwatch.injection.workbench.report",
    ),
    # the second round: the cue sets, detectors, split options, model path and receiver
    # defaults moved to light modules, the rooms' __init__s load their names lazily
    "train": (
        "tqdm",
        "pydantic",
        "toolwatch.collector.store.parquet_store",
        "toolwatch.detection.calls.split",
        "toolwatch.detection.model.adaptive",
        "toolwatch.detection.model.normal_model",
    ),
    "experiment": (
        "toolwatch.collector.sources.delivery",
        "toolwatch.collector.stats.corpus",
        "toolwatch.detection.calls.split",
        "toolwatch.injection.experiment.protocol",
        "toolwatch.injection.experiment.storage",
    ),
    "replay": (
        "tqdm",
        "pydantic",
        "toolwatch.collector.stats.corpus",
        "toolwatch.detection.calls.split",
        "toolwatch.detection.model.normal_model",
        "toolwatch.injection.experiment.protocol",
    ),
    "pins": ("toolwatch.collector.store.parquet_store", "toolwatch.collector.store.result_formats"),
    "rules": ("toolwatch.collector.store.result_formats", "toolwatch.detection.alerting.rules"),
    "demo": ("toolwatch.app.demo.pipeline",),
    "import": (
        "pyarrow",
        "toolwatch.collector.sources.delivery",
        # the fourth round: the claude_code package lazy, the parser, the provenance measures
        # and the OTLP exporter (protobuf, the OpenTelemetry SDK) imported when it runs
        "toolwatch.collector.sources.claude_code.parsing",
        "toolwatch.collector.sources.claude_code.records",
        "toolwatch.instrumentation.export.otlp",
        "toolwatch.instrumentation.provenance",
    ),
    "app": ("toolwatch.collector.store.parquet_store",),
    "collector": (
        "toolwatch.collector.otlp.server",
        "toolwatch.detection.alerting.listings",
        "toolwatch.detection.alerting.rules",
    ),
    # the third round: the serving options in proxy/options.py, the faults', the proxy's and
    # the workbench's __init__s lazy, the scenario library (on mcp) imported when a command runs
    "proxy": ("toolwatch.injection.faults.library", "toolwatch.injection.proxy.proxy"),
    "serve-scenario": (
        "toolwatch.injection.faults.library",
        "toolwatch.injection.faults.server",
        "toolwatch.injection.proxy.proxy",
    ),
    "scenarios": (
        "toolwatch.injection.faults.codec",
        "toolwatch.injection.faults.engine",
        "toolwatch.injection.faults.library",
    ),
}


def _wall(code: str, repeat: int) -> float:
    """Best wall time of ``python -c code`` in a fresh interpreter (seconds)."""
    best = float("inf")
    for _ in range(repeat):
        began = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)
        best = min(best, time.perf_counter() - began)
    return best


def _help(command: str, preload: Sequence[str] = ()) -> str:
    imports = "".join(f"import {m}\n" for m in preload)
    return (
        f"{imports}import sys\nfrom toolwatch.cli import main\n"
        f"try:\n    main([{command!r}, '--help'])\nexcept SystemExit:\n    pass\n"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = command_line(__doc__)
    parser.add_argument(
        "--repeat", type=positive_int, default=5, help="runs of each, the best kept (default 5)"
    )
    args = parser.parse_args(argv)
    floor = _wall("import toolwatch.cli", args.repeat)
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"import toolwatch.cli: {floor:.3f} s (the floor); load average {load}")
    print(f"{'command':<14} {'before s':>9} {'after s':>8} {'before/after':>13}")
    for command, moved in MOVED.items():
        before = _wall(_help(command, moved), args.repeat)
        after = _wall(_help(command), args.repeat)
        print(f"{command:<14} {before:>9.3f} {after:>8.3f} {before / after:>12.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
