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

``--memory``: peak memory instead of time. The corpus's last test stream is made
``--long-calls`` long (100,000: its calls repeated, one after another), and the protocol runs
once with one seed (the baseline) and once with ``--seeds`` (5, the default), each in a fresh
process, whose peak RSS above the loaded corpus is printed with their ratio. Every seed's
runs were once kept to the end (five seeds grew 4.4x as much as one); the experiment now
keeps only their summaries, and the target is ≤ 1.25x.

Run: ``.venv/bin/python benchmarks/bench_experiment.py [--repeat 3] [--budget 15] [--no-fail]``,
``… --memory [--long-calls 100000] [--seeds 5]`` (quick: ``--memory --long-calls 5000``).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from toolwatch.collector.sources.simulator import simulate
from toolwatch.collector.store.parquet_store import Store
from toolwatch.detection import NormalModel, score_calls
from toolwatch.injection.experiment import ExperimentConfig, run_experiment, save_result
from toolwatch.usage import positive_float, positive_int
from toolwatch.words import counted

sys.path.insert(0, str(Path(__file__).resolve().parent))  # targets: the shared convention
from targets import Targets, add_no_fail, command_line

#: seconds the whole protocol may take on this 2-core machine (issue 5)
BUDGET_S = 15.0
#: growth of the peak memory with the default five seeds over one seed's (it was 4.4)
MEMORY_RATIO = 1.25


def long_stream(calls: pa.Table, length: int) -> pa.Table:
    """``calls`` with its last stream (a test stream) made ``length`` calls long: its calls
    repeated one after another, each copy with its own span, response and call ids."""
    last = calls.sort_by([("start_time", "descending")])["session_id"][0]
    stream = calls.filter(pc.equal(calls["session_id"], last)).sort_by("seq")
    times = stream["start_time"].cast(pa.int64()).to_numpy()
    step = int(times[-1] - times[0]) + 60_000_000  # a minute between copies
    copies = []
    for c in range(-(-length // stream.num_rows)):
        copy = stream.set_column(
            stream.schema.get_field_index("start_time"),
            "start_time",
            pa.array(times + c * step, pa.timestamp("us", tz="UTC")),
        )
        for name in ("span_id", "response_id", "call_id"):
            renamed = pc.binary_join_element_wise(copy[name], pa.scalar(f"~{c}"), "")
            copy = copy.set_column(copy.schema.get_field_index(name), name, renamed)
        copies.append(copy)
    long = pa.concat_tables(copies).slice(0, length)
    seq = pa.array(np.arange(length, dtype=np.int32))
    long = long.set_column(long.schema.get_field_index("seq"), "seq", seq)
    rest = calls.filter(pc.not_equal(calls["session_id"], last))
    return pa.concat_tables([rest, pa.Table.from_arrays(long.columns, schema=calls.schema)])


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def memory_child(length: int, seeds: int, ablation: bool) -> None:
    """One protocol run in this process: prints its peak RSS above the loaded corpus."""
    calls = long_stream(simulate(seed=0), length)
    before = _peak_mb()
    t0 = time.process_time()
    run_experiment(calls, ExperimentConfig(seeds=tuple(range(seeds)), ablation=ablation))
    print(
        json.dumps({"corpus_mb": before, "peak_mb": _peak_mb(), "cpu_s": time.process_time() - t0})
    )


def memory(args: argparse.Namespace) -> int:
    """Peak memory of the protocol with ``--seeds`` seeds against one seed, each run alone."""
    runs = {}
    for seeds in (1, args.seeds):
        command = [sys.executable, __file__, "--memory-child", str(args.long_calls), str(seeds)]
        out = subprocess.run(
            [*command, *(["--no-ablation"] if args.no_ablation else [])],
            check=True,
            capture_output=True,
            text=True,
        )
        runs[seeds] = json.loads(out.stdout.splitlines()[-1])
    print(
        "corpus: the simulated corpus, its last test stream made "
        f"{counted(args.long_calls, 'call')} long"
        f" ({'no ablation' if args.no_ablation else 'with the ablation'})"
    )
    for seeds, r in runs.items():
        growth = r["peak_mb"] - r["corpus_mb"]
        print(
            f"  {counted(seeds, 'seed')}: peak RSS {r['peak_mb']:,.0f} MB, {growth:,.0f} MB "
            f"above the loaded corpus ({r['corpus_mb']:,.0f} MB), cpu {r['cpu_s']:.1f} s"
        )
    one, many = runs[1], runs[args.seeds]
    ratio = (many["peak_mb"] - many["corpus_mb"]) / (one["peak_mb"] - one["corpus_mb"])
    print(f"baseline: the one-seed run; {counted(args.seeds, 'seed')} = {ratio:.2f}x its growth")
    targets = Targets()
    targets.check(
        f"peak memory, {counted(args.seeds, 'seed')} over 1", ratio, "<=", MEMORY_RATIO, "x"
    )
    print(targets.report())
    return targets.exit_code(args.no_fail)


def baseline(calls: pa.Table, repeat: int = 3) -> float:
    """Best wall seconds of one fit and one batch scoring pass of the uninjected corpus."""
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        score_calls(NormalModel.fit(calls), calls)
        best = min(best, time.perf_counter() - t0)
    return best


def main(argv: list[str] | None = None) -> int:
    parser = command_line(__doc__)
    parser.add_argument(
        "--repeat", type=positive_int, default=3, help="protocol runs (best is kept)"
    )
    parser.add_argument("--budget", type=positive_float, default=BUDGET_S, help="seconds allowed")
    parser.add_argument("--no-ablation", action="store_true", help="skip the ablation pass")
    parser.add_argument("--memory", action="store_true", help="peak memory, not time")
    parser.add_argument(
        "--long-calls", type=positive_int, default=100_000, help="--memory: stream length"
    )
    parser.add_argument("--seeds", type=positive_int, default=5, help="--memory: seeds against one")
    parser.add_argument("--memory-child", nargs=2, type=int, help=argparse.SUPPRESS)
    add_no_fail(parser)
    args = parser.parse_args(argv)
    if args.memory_child:
        length, seeds = args.memory_child
        memory_child(length, seeds, ablation=not args.no_ablation)
        return 0
    if args.memory:
        return memory(args)

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
    kinds = result.config.kinds  # as run: no provenance kinds on a corpus without provenance
    runs = test_sessions * len(config.seeds) * len(kinds)
    passes = 2 if config.ablation else 1
    print(f"corpus: {counted(calls.num_rows, 'simulated call')} (simulate: {t_sim:.2f} s)")
    print(
        f"protocol: {counted(test_sessions, 'test session')} × "
        f"{counted(len(config.seeds), 'seed')} × "
        f"{counted(len(kinds), 'kind')} = {counted(runs, 'injected run')}, "
        f"{counted(passes, 'scoring pass', 'scoring passes')}, "
        f"{counted(config.bootstrap, 'bootstrap resample')}"
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
