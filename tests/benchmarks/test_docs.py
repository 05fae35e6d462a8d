"""The benchmark commands and targets the docs state are the scripts' own: every option a
documented command line shows exists, and benchmarks/README.md lists every script with the
targets its code holds."""

from __future__ import annotations

import contextlib
import io
import re

import pytest

from support.benchmarks import load_benchmark
from support.paths import REPO

DOCS = {
    name: (REPO / name).read_text()
    for name in ("README.md", "docs/ARCHITECTURE.md", "benchmarks/README.md")
}
TABLE = DOCS["benchmarks/README.md"]
#: a command line in backticks: `[.venv/bin/python ][benchmarks/]<script>.py [options]`
COMMAND = r"`(?:(?:\.venv/bin/)?python3? )?(?:[^`\s]*/)?(\w+)\.py([^`]*)`"
SCRIPTS = sorted(p.stem for p in (REPO / "benchmarks").glob("*.py") if p.stem != "targets")


def _options(name: str) -> set[str]:
    with contextlib.redirect_stdout(io.StringIO()) as out, pytest.raises(SystemExit):
        load_benchmark(name).main(["--help"])
    return set(re.findall(r"--[a-z][a-z-]*", out.getvalue()))


def _row(name: str) -> str:
    found = re.search(rf"^\| `{name}\.py` \|.*$", TABLE, flags=re.M)
    assert found, f"benchmarks/README.md has no row for {name}.py"
    return found.group(0)


def test_every_option_a_documented_benchmark_command_shows_exists() -> None:
    used: dict[str, set[str]] = {}
    for text in DOCS.values():
        for name, rest in re.findall(COMMAND, text):
            if name in SCRIPTS:
                used.setdefault(name, set()).update(re.findall(r"--[a-z][a-z-]*", rest))
    for name in SCRIPTS:  # the table's rows: a script's options in its own row
        used.setdefault(name, set()).update(re.findall(r"--[a-z][a-z-]*", _row(name)))
    wrong = {name: sorted(opts - _options(name)) for name, opts in used.items()}
    assert {name: opts for name, opts in wrong.items() if opts} == {}


def test_the_table_states_the_targets_the_scripts_hold() -> None:
    collector = load_benchmark("bench_collector")
    detection = load_benchmark("bench_detection")
    instrumentation = load_benchmark("bench_instrumentation")
    hostile = load_benchmark("bench_hostile_clients")
    scanner = load_benchmark("bench_scanner")
    app = load_benchmark("bench_app")
    experiment = load_benchmark("bench_experiment")
    fuzz_proxy = load_benchmark("fuzz_proxy")
    expected = {
        "bench_collector": [f"≥ {collector.TARGET:,}"],
        "bench_detection": [
            f"≥ {detection.TARGET_ONLINE:,}",
            f"batch ≥ {detection.TARGET_BATCH:,}",
            f"adaptive ≥ {detection.TARGET_ADAPTIVE:,}",
            f"≤ {detection.TARGET_BYTES:,} B",
        ],
        "bench_instrumentation": [f"≤ {instrumentation.TARGET_OVERHEAD * 100:.0f} %"],
        "bench_hostile_clients": [
            f"≤ {hostile.TARGET_RSS_MIB} MiB",
            f"≤ {hostile.TARGET_LATENCY_S:.0f} s",
        ],
        "bench_scanner": [
            f"≥ {scanner.TARGET_RECALL}",
            f"≤ {scanner.TARGET_DESC_FPR * 100:.0f} %",
        ],
        "bench_app": [
            f"≤ {app.TARGET_DEMO_S:.0f} s",
            f"({app.DEMO_SIZE_CALLS:,} calls)",
            f"≤ {app.TARGET_LARGE_S:.0f} s",
        ],
        "bench_experiment": [f"≤ {experiment.BUDGET_S:.0f} s"],
        "fuzz_proxy": [
            f"≤ {fuzz_proxy.TARGET_PEAK_MIB} MiB",
            f"≤ {fuzz_proxy.TARGET_GROWTH_MIB} MiB",
        ],
    }
    missing = {n: [t for t in want if t not in _row(n)] for n, want in expected.items()}
    assert {n: m for n, m in missing.items() if m} == {}
