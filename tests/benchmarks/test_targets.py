"""The benchmarks' one convention (benchmarks/README.md): each target printed met or MISSED, exit
1 on a miss unless --no-fail, and a --help that says what the script does."""

from __future__ import annotations

import contextlib
import io

import pytest

from support.benchmarks import load_benchmark
from support.paths import REPO

targets = load_benchmark("targets")

SCRIPTS = sorted(p.stem for p in (REPO / "benchmarks").glob("*.py") if p.stem != "targets")
#: the scripts whose targets are timings or sizes: a loaded machine may miss them
TIMED = {
    "bench_app",
    "bench_collector",
    "bench_detection",
    "bench_experiment",
    "bench_hostile_clients",
    "bench_instrumentation",
    "bench_scanner",
}


def test_a_missed_target_is_printed_and_fails_the_run_unless_no_fail() -> None:
    t = targets.Targets()
    assert t.check("rate", 151_000.0, ">=", 150_000, " spans/s")
    assert not t.check("memory", 4097, "<=", 4096, " B")
    assert not t.check("affected", 1, "==", 0)
    assert t.report().splitlines() == [
        "target rate: 151,000 spans/s (target >= 150,000 spans/s) -> met",
        "target memory: 4,097 B (target <= 4,096 B) -> MISSED",
        "target affected: 1 (target == 0) -> MISSED",
        "targets: 1/3 met; MISSED: memory; affected",
    ]
    assert (t.exit_code(no_fail=False), t.exit_code(no_fail=True)) == (1, 0)
    met = targets.Targets()
    met.check("wall", 1.734, "<=", 15, " s")
    assert met.lines == ["target wall: 1.73 s (target <= 15 s) -> met"]
    assert met.exit_code(no_fail=False) == 0
    with pytest.raises(ValueError, match="unknown comparison '<'"):
        met.check("x", 1, "<", 2)


@pytest.mark.parametrize("name", SCRIPTS)
def test_every_script_answers_help_with_its_whole_first_paragraph(name: str) -> None:
    module = load_benchmark(name)
    with contextlib.redirect_stdout(io.StringIO()) as out, pytest.raises(SystemExit) as done:
        module.main(["--help"])
    assert done.value.code == 0
    text = " ".join(out.getvalue().split())
    first = targets.description(module.__doc__)
    assert first[-1] in ".?", f"{name}: its docstring's first paragraph is not a sentence"
    assert " ".join(first.split()) in text
    assert ("--no-fail" in text) == (name in TIMED), name


def test_the_hostile_clients_targets_hold_the_attacked_runs_not_the_client_alone() -> None:
    bench = load_benchmark("bench_hostile_clients")
    fat = {"rss_peak_mib": 450, "503_without_retry_after": 0}
    results = {
        "poisoned": {"valid_not_200": 0},
        "fat_clients": {"json": fat | {"rss_peak_mib": 513}, "protobuf": fat},
        "slow_clients_baseline_no_attackers": {"good_max_s": 1.4},  # the disk, not the attack
        "slow_clients_hard_limit": {"good_max_s": 0.09},
        "slow_clients_soft_limit": {"good_max_s": 1.2},
    }
    t = bench.check(results)
    assert t.missed == [
        "fat clients (json) peak RSS",
        "slow_clients_soft_limit worst answer (alone: 1.4 s)",
    ]
    assert len(t.lines) == 7
    hard = "slow_clients_hard_limit worst answer (alone: 1.4 s): 0.09 s (target <= 1 s) -> met"
    assert f"target {hard}" in t.lines


def test_the_app_holds_a_store_to_the_target_of_its_size() -> None:
    bench = load_benchmark("bench_app")
    t = targets.Targets()
    bench.check(t, "demo", 26_354, 2.1)
    bench.check(t, "large", 998_141, 2.54)
    assert t.lines == [
        "target demo (26,354 calls) worst first paint: 2.1 s (target <= 2 s) -> MISSED",
        "target large (998,141 calls) worst first paint: 2.54 s (target <= 5 s) -> met",
    ]


def test_the_collector_benchmark_names_lost_or_doubled_rows_in_one_line() -> None:
    """It ended on bare asserts: a collector that lost rows gave a traceback and
    ``AssertionError: rows missing``, saying neither how many nor where."""
    bench = load_benchmark("bench_collector")
    check = bench.stored_wrongly
    good = {"answered": 3, "sent": 3, "stored": 11_000, "collected": 11_000, "duplicates": 0}
    assert check(**good, expected=11_000) is None
    assert check(**(good | {"answered": 2}), expected=11_000) == "1 of 3 requests not answered 200"
    assert (
        check(**(good | {"stored": 10_000}), expected=11_000)
        == "10,000 rows read back, 11,000 counted by the collector, 11,000 sent"
    )
    assert check(**(good | {"duplicates": 5}), expected=11_000) == (
        "5 spans counted as duplicates (every span is sent once)"
    )


#: every option a script takes as a count (rounds, requests, sizes, seconds): 0 is refused
COUNTS = {
    "bench_app": ["--sessions", "--baseline-sessions", "--rounds"],
    "bench_cli_help": ["--repeat"],
    "bench_collector": ["--requests", "--concurrency", "--distinct"],
    "bench_compaction_crash": ["--trials", "--files", "--rows"],
    "bench_detection": ["--copies", "--repeat"],
    "bench_experiment": ["--repeat", "--budget", "--long-calls", "--seeds"],
    "bench_hostile_clients": [
        "--fat-clients",
        "--fat-seconds",
        "--slow",
        "--slow-seconds",
        "--start-timeout",
    ],
    "bench_import": ["--mb", "--tiny"],
    "bench_instrumentation": ["--calls", "--rounds"],
    "bench_provenance": ["--rounds", "--calls", "--reps"],
    "bench_store_info": ["--calls", "--files", "--repeat"],
    "bench_store_views": ["--calls", "--files", "--repeat"],
    "fuzz_http": ["--requests", "--start-timeout"],
    "fuzz_proxy": ["--requests", "--stdio-lines", "--every", "--max-upstream-sessions"],
}


def _refused(name: str, argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as done:
        load_benchmark(name).main(argv)
    out, err = capsys.readouterr()
    assert (done.value.code, out) == (2, ""), (name, argv)
    assert len(err.splitlines()) == 1, f"{name} {argv}: not one line: {err!r}"
    return err


@pytest.mark.parametrize("name", SCRIPTS)
def test_an_unknown_option_is_one_line_and_exit_2(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """argparse printed its usage block first (two to five lines)."""
    required = ["t.jsonl", "--csv", "r.csv"] if name == "provenance_agreement" else []
    assert "--bogus" in _refused(name, [*required, "--bogus"], capsys)


@pytest.mark.parametrize(("name", "option"), [(n, o) for n, opts in COUNTS.items() for o in opts])
def test_a_count_of_0_is_refused_before_any_work(
    name: str, option: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A 0 ran until a traceback (an empty median, a division by zero, hypothesis's
    max_examples) or, for a correctness contract, passed with nothing tried."""
    assert option in _refused(name, [option, "0"], capsys)
