"""Benchmark: the study's full injection protocol on the 422-session simulated corpus.

Budget (issue 5): ≤ 15 s wall on this 2-core machine for the whole protocol — time split,
injection context, the study's 7 anomalies + 2 controls and the 9 exfiltrations with provenance
× 5 seeds × every test session, fit + calibrate, batch scoring of every cue set × detector, both
threshold modes, 2,000 bootstrap resamples, per-call AUC — and the response-boundary ablation
(a second fit and scoring pass).

Reports the stage breakdown (``ExperimentResult.timings``) plus, separately, the time to
simulate the corpus and to write the results into a fresh store, and the runs scored per
second. The baseline, measured in the same run: one fit and one batch scoring pass of the
uninjected corpus (``NormalModel.fit`` + ``score_calls``, best of 3 wall), so the protocol is
also printed as a ratio that a loaded machine moves less than seconds. Exits 1 when the protocol
exceeds the budget (``--no-fail``: report only).

Run: ``.venv/bin/python benchmarks/bench_experiment.py [--repeat 3] [--budget 15] [--no-fail]``.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa

from toolwatch.collector.sources.simulator import simulate
from toolwatch.collector.store.parquet_store import Store
from toolwatch.detection import NormalModel, score_calls
from toolwatch.injection.experiment import ExperimentConfig, run_experiment, save_result

sys.path.insert(0, str(Path(__file__).resolve().parent))  # targets: the shared convention
from targets import Targets, add_no_fail, description

#: seconds the whole protocol may take on this 2-core machine (issue 5)
BUDGET_S = 15.0


def baseline(calls: pa.Table, repeat: int = 3) -> float:
    """Best wall seconds of one fit and one batch scoring pass of the uninjected corpus."""
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        score_calls(NormalModel.fit(calls), calls)
        best = min(best, time.perf_counter() - t0)
    return best


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=description(__doc__))
    parser.add_argument("--repeat", type=int, default=3, help="protocol runs (best is kept)")
    parser.add_argument("--budget", type=float, default=BUDGET_S, help="seconds allowed")
    parser.add_argument("--no-ablation", action="store_true", help="skip the ablation pass")
    add_no_fail(parser)
    args = parser.parse_args(argv)

    t0 = time.perf_counter()
    calls = simulate(seed=0)
    t_sim = time.perf_counter() - t0
    config = ExperimentConfig(ablation=not args.no_ablation)
    t_base = baseline(calls)

    best = None
    walls = []
    cpus = []
    for _ in range(max(1, args.repeat)):
        t0, c0 = time.perf_counter(), time.process_time()
        result = run_experiment(calls, config)
        wall = time.perf_counter() - t0
        walls.append(wall)
        cpus.append(time.process_time() - c0)
        if best is None or wall < best[0]:
            best = (wall, result)
    assert best is not None
    wall, result = best

    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        save_result(Store(tmp), result)
        t_save = time.perf_counter() - t0

    test_sessions = result.split["test"][0]
    runs = test_sessions * len(config.seeds) * len(config.kinds)
    passes = 2 if config.ablation else 1
    print(f"corpus: {calls.num_rows:,} simulated calls (simulate: {t_sim:.2f} s)")
    print(
        f"protocol: {test_sessions} test sessions × {len(config.seeds)} seeds × "
        f"{len(config.kinds)} kinds = {runs:,} injected runs, {passes} scoring pass(es), "
        f"{config.bootstrap:,} bootstrap resamples"
    )
    print("stage breakdown (best run):")
    for stage, seconds in result.timings.items():
        print(f"  {stage:<12} {seconds:6.2f} s")
    print(f"  {'total':<12} {wall:6.2f} s   (all runs: {', '.join(f'{w:.2f}' for w in walls)})")
    print(
        f"  cpu time     {min(cpus):6.2f} s   (wall above cpu = waiting for a core on a shared "
        f"machine; load average {os.getloadavg()[0]:.1f})"
    )
    print(f"  runs scored  {runs * passes / wall:,.0f} per second")
    print(
        f"baseline: one fit + batch scoring pass of the corpus {t_base:.3f} s; "
        f"protocol = {wall / t_base:,.0f}x the baseline"
    )
    print(f"save to a fresh store: {t_save:.2f} s")
    targets = Targets()
    targets.check("protocol wall time (best run)", wall, "<=", args.budget, " s")
    print(targets.report())
    return targets.exit_code(args.no_fail)


if __name__ == "__main__":
    sys.exit(main())
