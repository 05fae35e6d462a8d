"""The command line's one convention: a user error is one line on stderr (``toolwatch CMD:
…``) and a non-zero exit (1: could not do the job, 2: bad usage), never a traceback; ``-v``
shows the traceback. Each finding of issue 16 is run as a user would type it.
"""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from support.parsers import all_parsers
from toolwatch import cli, usage
from toolwatch.cli import main
from toolwatch.collector.sources.simulator import simulate
from toolwatch.collector.store import Store


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("cli") / "store"
    Store(root).append("calls", simulate(seed=5, sessions=60))
    return root


@pytest.fixture(scope="module")
def trained(store: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The store with a model (``toolwatch train``'s default windows)."""
    assert main(["train", "--store", str(store)]) == 0
    return store


def one_error(err: str, command: str, *needles: str) -> str:
    """``err`` is exactly one line of the convention, holding every needle."""
    assert "Traceback" not in err, err
    lines = err.splitlines()
    assert len(lines) == 1, lines
    line = lines[0]
    assert line.startswith(f"toolwatch {command}: "), line
    for needle in needles:
        assert needle in line, (needle, line)
    return line


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """``main(argv)``'s exit code (argparse's own exit included), stdout and stderr."""
    try:
        code = main(list(argv))
    except SystemExit as exc:  # argparse: its one line is printed, then sys.exit(2)
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def run_process(*argv: str) -> subprocess.CompletedProcess[str]:
    """``toolwatch ARGV`` as typed in a shell: the real process, its exit status and output
    (what a progress bar on stderr needs: a terminal-like stream of its own)."""
    return subprocess.run(
        [sys.executable, "-m", "toolwatch", *argv], capture_output=True, text=True, timeout=120
    )


def test_collector_port_out_of_range_is_a_usage_error() -> None:
    """As typed in a shell: the real process, its exit status and its stderr."""
    done = run_process("collector", "--port", "99999")
    assert done.returncode == 2
    one_error(done.stderr, "collector", "argument --port: 99999 is not a TCP port (0-65535")
    assert done.stdout == ""


def test_sql_on_an_unknown_view_lists_the_stores_views(
    store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run_cli(capsys, "sql", "SELECT * FROM nosuch", "--store", str(store))
    assert code == 1 and out == ""
    line = one_error(err, "sql", "no view named nosuch", "the store's views: ")
    assert "pg_sequences" not in line
    views = line.split("the store's views: ")[1].split(", ")
    assert {"calls", "sessions", "streams", "alerts", "stream_scores"} <= set(views)


def test_sql_runs_every_statement_and_refuses_empty_sql(
    store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run_cli(capsys, "sql", "SELECT 1 AS a; SELECT 2 AS b", "--store", str(store))
    assert code == 0 and err == ""
    assert out == "-- 1/2\na\n─\n1\n(1 row)\n\n-- 2/2\nb\n─\n2\n(1 row)\n"
    for empty in ("", "  ;  "):
        code, out, err = run_cli(capsys, "sql", empty, "--store", str(store))
        assert code == 2 and out == ""
        one_error(err, "sql", "no SQL statement given")
    code, _, err = run_cli(
        capsys, "sql", "SELECT 1; SELECT 2", "--store", str(store), "--format", "csv"
    )
    assert code == 2
    one_error(err, "sql", "--format csv prints one result")
    code, _, err = run_cli(capsys, "sql", "SELEC 1", "--store", str(store))
    assert code == 1
    assert "^" not in one_error(err, "sql", "syntax error")


def test_scan_checks_its_inputs_before_the_progress_bar(store: Path, tmp_path: Path) -> None:
    done = run_process("scan", "--store", str(store), "--model", str(tmp_path / "none.json"))
    assert done.returncode == 1
    one_error(done.stderr, "scan", "none.json")  # one line: no "scan: 0%|" bar before it


def test_replay_checks_its_store_before_the_progress_bar(tmp_path: Path) -> None:
    done = run_process("replay", "--store", str(tmp_path / "nothing-here"))
    assert done.returncode == 1  # could not do the job (as train and experiment say it)
    one_error(done.stderr, "replay", "holds no calls")  # one line: no "replay: 0%|" bar before it


SPLIT_COMMANDS = ("train", "scan", "experiment", "replay")


@pytest.mark.parametrize("command", SPLIT_COMMANDS)
@pytest.mark.parametrize(
    ("option", "needle"),
    [
        (["--split-shares", "1.5,0.1"], "split shares 1.5,0.1"),
        # argparse took "-0.1,0.5" for an option: "expected one argument"
        (["--split-shares", "-0.1,0.5"], "split shares -0.1,0.5: need 0 < train < 1"),
        (["--split-dates", "2026-13-01,2026-01-01"], "'2026-13-01' is not an ISO date"),
        (["--split-dates", "2026-02-01,2026-01-01"], "calibration must end on or after"),
        (["--min-calls", "0"], "--min-calls"),
    ],
)
def test_a_bad_split_option_is_bad_usage_in_every_command(
    trained: Path, command: str, option: list[str], needle: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """The split options are shared, so is what a bad value gets: exit 2, one line naming it
    (train and scan said 1, experiment and replay 2)."""
    code, _, err = run_cli(capsys, command, "--store", str(trained), *option)
    assert code == 2
    one_error(err, command, needle)


def test_a_value_starting_like_a_negative_number_stays_with_its_option() -> None:
    """Only such a value after a long option is attached (as its ``=`` form); argparse's own
    negative numbers, short options and anything after ``--`` are left as typed."""
    attach = usage.attach_dashed_values
    assert attach(["scan", "--split-shares", "-0.1,0.5", "--min-calls", "-1e3"]) == [
        "scan",
        "--split-shares=-0.1,0.5",
        "--min-calls=-1e3",
    ]
    as_typed = [
        ["train", "--target-fa", "-0.5", "--seeds", "-3"],
        ["train", "--split-shares=-0.1,0.5", "-0.2,0.3"],
        ["x", "-s", "-0.1,0.5"],
        ["sql", "--", "--a", "-0.1,0.5"],
        ["sql", "--", "-.1,2"],
        ["train", "--split-shares", "--min-calls", "3"],
    ]
    for argv in as_typed:
        assert attach(argv) == argv


@pytest.mark.parametrize("command", ["train", "experiment", "replay"])
def test_a_store_without_calls_is_a_job_that_cannot_be_done(
    tmp_path: Path, command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run_cli(capsys, command, "--store", str(tmp_path / "nothing-here"))
    assert code == 1
    one_error(err, command, "holds no")


@pytest.mark.parametrize(
    "argv",
    [
        ["replay", "--batch-seconds", "0"],
        ["replay", "--batch-seconds", "1e13"],  # overflowed the batching: exit 70
        ["replay", "--target-fa", "2"],
        ["train", "--adaptive", "--target-fa", "0"],
        ["train", "--adaptive", "--half-life-days", "-1"],
        ["experiment", "--bootstrap", "-5"],
        ["experiment", "--seeds", "0"],
        ["scan", "--top", "0"],
        ["store", "compact", "--min-files", "0"],
        ["simulate", "--days", "0"],
        ["workbench", "suite", "--concurrency", "0"],
    ],
)
def test_numbers_out_of_range_are_refused_when_parsed(
    trained: Path, argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """Each used to run (a replay of nan thresholds, an experiment of -5 resamples, a scan
    table cut at -1 rows) or to fail after work had started."""
    code, _, err = run_cli(capsys, *argv, "--store", str(trained))
    assert code == 2
    assert "Traceback" not in err and f"argument {argv[-2]}" in err, err


@pytest.mark.parametrize(
    ("argv", "field"),
    [
        (["replay", "--seeds", "1", "--quarantine-hours", "1e300"], "quarantine_h=1e+300"),
        (["replay", "--seeds", "1", "--pool-days", "1e300"], "pool_days=1e+300"),
        (["train", "--adaptive", "--quarantine-hours", "1e300"], "quarantine_h=1e+300"),
    ],
)
def test_adaptive_time_spans_past_a_century_are_bad_usage(
    trained: Path, tmp_path: Path, argv: list[str], field: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """replay failed with an OverflowError (exit 70); train wrote a model whose every live
    fold failed (logged, counted, never learnt)."""
    out = ["--out", str(tmp_path / "m.json")] if argv[0] == "train" else []
    code, _, err = run_cli(capsys, *argv, "--store", str(trained), *out)
    assert code == 2
    one_error(err, argv[0], "adaptive config: invalid", field, "876,000" if "quar" in field else "")


@pytest.mark.parametrize("command", ["train", "experiment", "replay"])
def test_a_bad_model_config_is_bad_usage_before_the_progress_bar(store: Path, command: str) -> None:
    done = run_process(command, "--store", str(store), "--model-config", "novelty_key=nope")
    assert done.returncode == 2  # the same code in both commands (train said 1, experiment 2)
    one_error(done.stderr, command, "--model-config")  # one line: no progress bar before it
    assert "novelty_key" in done.stderr


@pytest.mark.parametrize("setting", ["cusum_k=abc", "order_session_mix=maybe"])
def test_a_model_config_value_of_the_wrong_type_is_bad_usage(store: Path, setting: str) -> None:
    """``cusum_k=abc`` failed inside the fit as a bug (exit 70); ``order_session_mix=maybe``
    ran as true."""
    done = run_process("experiment", "--store", str(store), "--model-config", setting)
    assert done.returncode == 2
    one_error(done.stderr, "experiment", "--model-config")
    assert setting.split("=")[0] in done.stderr


def test_scan_prints_whole_session_ids(trained: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "scan", "--store", str(trained), "--top", "50")
    assert code == 0
    flagged = (
        Store(trained)
        .query("SELECT session_id FROM stream_scores WHERE flagged")
        .column("session_id")
        .to_pylist()
    )
    assert flagged, "the test store has flagged streams"
    for sid in set(flagged):
        assert len(sid) > 28 and sid in out  # whole (it used to be cut at 28 characters)


def test_app_on_a_busy_port_says_so_before_any_url(
    store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        code, out, err = run_cli(capsys, "app", "--store", str(store), "--port", str(port))
    assert code == 1
    assert out == ""  # no URL of another server
    one_error(err, "app", f"port {port} on 127.0.0.1 is not available", "--port 0")


def test_stats_on_a_missing_store(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "stats", "--store", str(tmp_path / "typo"))
    assert code == 1 and out == ""
    one_error(err, "stats", f"no store at {tmp_path / 'typo'}")


def test_train_warns_about_one_calibration_session(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    days = (  # streams by the day of their first call (the split's unit)
        Store(store)
        .query(
            "SELECT d, count(*) AS n FROM (SELECT min(start_time)::DATE AS d FROM calls "
            "GROUP BY session_id, agent_id) GROUP BY 1 ORDER BY 1"
        )
        .to_pylist()
    )
    i = next(i for i, d in enumerate(days) if i > 0 and d["n"] == 1)
    code, out, err = run_cli(
        capsys,
        "train",
        "--store",
        str(store),
        "--split-dates",
        f"{days[i - 1]['d']},{days[i]['d']}",
        "--out",
        str(tmp_path / "m.json"),
    )
    assert code == 0 and "model" in out
    # the progress bar erases itself (\r, leave=False); the warning is the one line after it
    one_error(
        err.rsplit("\r", 1)[-1].lstrip(),
        "train",
        "warning: the calibration split holds 1 stream and",
        "--split-shares",
    )


def test_help_names_defaults_and_transport(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        cli.build_parser(["collector"]).parse_args(["collector", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "interface to listen on (default 127.0.0.1)" in text
    assert "Retry-After (default 100,000)" in text
    with pytest.raises(SystemExit):
        cli.build_parser(["serve-scenario"]).parse_args(["serve-scenario", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--transport {stdio,http} stdio: speak MCP on stdin/stdout" in text


def _stated(default: object) -> str:
    """How a help text writes a default: ``60.0`` as ``60``."""
    return f"{default:g}" if isinstance(default, float) else str(default)


def test_every_option_with_a_default_says_it_in_its_help() -> None:
    """A user reads a default in ``--help`` before trusting the docs; `proxy --port` (8000)
    and the workbench's `--seed`, `--call-timeout` and `--think-time` said none."""
    silent = []
    for path, parser in all_parsers().items():
        for action in parser._actions:
            if not action.option_strings or action.nargs == 0 or action.default in (None, []):
                continue  # flags, options without a default and repeatable ones given none
            text = " ".join((action.help or "").split())
            if "default" not in text and f"({_stated(action.default)})" not in text:
                silent.append(f"{' '.join(path)} {action.option_strings[-1]}")
    assert silent == []


@pytest.mark.parametrize(
    ("argv", "code", "needle"),
    [
        (["sql", "SELECT 1", "--max-rows", "-1"], 2, "argument --max-rows: -1 must be 0 or more"),
        (["app", "--refresh", "0"], 2, "argument --refresh: 0 must be a positive number"),
        (["app", "--port", "70000"], 2, "argument --port: 70000 is not a TCP port"),
        (["serve-scenario", "x", "--port", "-5"], 2, "argument --port: -5 is not a TCP port"),
        (["proxy", "--port", "http"], 2, "argument --port: 'http' is not a whole number"),
        (["collector", "--queue-limit", "0"], 2, "argument --queue-limit: 0 must be at least 1"),
        (["sql"], 2, "the following arguments are required: sql"),
        (["nosuch"], 2, "invalid choice: 'nosuch'"),
    ],
)
def test_bad_values_are_one_line_usage_errors(
    argv: list[str], code: int, needle: str, capsys: pytest.CaptureFixture[str]
) -> None:
    got, out, err = run_cli(capsys, *argv)
    assert got == code and out == ""
    command = argv[0] if argv[0] in cli.COMMANDS else None
    assert "Traceback" not in err and len(err.splitlines()) == 1, err
    assert err.startswith(f"toolwatch {command}: " if command else "toolwatch: ")
    assert needle in err


@pytest.mark.parametrize(
    ("argv", "code", "needle"),
    [
        (["collector", "--port", "0"], 1, "store path {file} is not a directory"),
        (["stats"], 1, "store path {file} is not a directory"),
        (["store", "info"], 1, "store path {file} is not a directory"),
        (["simulate", "--otlp", "notaurl"], 2, "--otlp notaurl: give an http(s)://host:port URL"),
        (["simulate", "--otlp", "http://[::1"], 2, "--otlp http://[::1: give an http(s)://"),
        (["simulate", "--otlp", "http://h:99999"], 2, "--otlp http://h:99999: give an http(s)://"),
        (["simulate", "--start", "9999-12-30"], 2, "42 days from 9999-12-30 run past the year"),
        (["simulate", "--seed", str(2**70)], 2, "seed must be from 0 to 9223372036854775807"),
        (["train", "--target-fa", "0.1"], 2, "--target-fa only with --adaptive"),
    ],
)
def test_mistakes_found_by_a_review_are_one_line_before_any_work(
    tmp_path: Path, argv: list[str], code: int, needle: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each used to say something else: a raw ``[Errno 17] File exists`` after a log line
    (collector), "no store at" for a file, a JSON pointer ``/`` and "0 valid, 1 invalid" for
    a missing path, a directory created for ``--out``, a summary of generated data before the
    bad URL, a ``--target-fa`` silently ignored."""
    file = tmp_path / "afile"
    file.write_text("x")
    missing = tmp_path / "missing"
    where = {"file": file, "missing": missing}
    argv = [a.format(**where) for a in argv]
    if "--store" not in argv and argv[0] not in ("scenarios",):
        argv += ["--store", str(file if "store path" in needle else tmp_path)]
    got, out, err = run_cli(capsys, *argv)
    assert got == code and out == "", (got, out, err)
    assert "Traceback" not in err and len(err.splitlines()) == 1, err
    assert needle.format(**where) in err
    assert not missing.exists()


#: Every command that reads an input path, with the path missing ({m}). By the convention
#: (:mod:`toolwatch.usage`) that is "could not do its job with what it found", exit 1, as a
#: missing store or model always was; ``scenarios``, ``import``, ``workbench``,
#: ``serve-scenario`` and ``proxy --scenario`` said 2 (bad usage) for the same mistake.
MISSING_INPUTS = [
    ["sql", "SELECT 1", "--store", "{m}"],
    ["stats", "--store", "{m}"],
    ["store", "info", "--store", "{m}"],
    ["store", "verify", "--store", "{m}"],
    ["pins", "list", "--store", "{m}"],
    ["train", "--store", "{m}"],
    ["experiment", "--store", "{m}"],
    ["replay", "--store", "{m}"],
    ["score", "--model", "{m}"],
    ["scan", "--model", "{m}"],
    ["collector", "--port", "0", "--model", "{m}"],
    ["collector", "--port", "0", "--rules", "{m}"],
    ["collector", "--port", "0", "--token-file", "{m}"],
    ["rules", "check", "{m}"],
    ["import", "claude-code", "{m}"],
    ["scenarios", "validate", "{m}"],
    ["scenarios", "list", "--path", "{m}"],
    ["scenarios", "show", "{m}"],
    ["serve-scenario", "{m}"],
    ["proxy", "--scenario", "{m}"],
    ["workbench", "run", "{m}"],
    ["workbench", "suite", "--scenarios", "{m}"],
    ["workbench", "suite", "--detect", "--model", "{m}"],
    ["app", "--model", "{m}"],
]


@pytest.mark.parametrize("argv", MISSING_INPUTS, ids=lambda a: " ".join(a[:-1]))
def test_a_missing_input_path_is_exit_1_in_every_command(
    tmp_path: Path, argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "missing.json"
    argv = [a.format(m=missing) for a in argv]
    if "--store" not in argv and argv[0] not in ("scenarios", "serve-scenario", "proxy"):
        argv += ["--store", str(tmp_path)]  # never the user's own
    code, out, err = run_cli(capsys, *argv)
    assert (code, out) == (1, ""), (code, out, err)
    one_error(err, argv[0], str(missing))
    assert not missing.exists()


#: Every command that writes an output file of its own, into a folder that is not there ({m}):
#: input the command cannot use, exit 1, said before any work; ``score --out`` said 2.
UNWRITABLE_OUTPUTS = [
    ["score", "--out", "{m}"],
    ["workbench", "suite", "--json", "{m}"],
    ["pins", "export", "-o", "{m}"],
    ["proxy", "--scenario", "a1-ops-01", "--injection-log", "{m}"],
]


@pytest.mark.parametrize("argv", UNWRITABLE_OUTPUTS, ids=lambda a: " ".join(a[:-1]))
@pytest.mark.parametrize("where", ["no folder", "a folder"])
def test_an_output_path_it_cannot_write_is_exit_1_in_every_command(
    tmp_path: Path, argv: list[str], where: str, capsys: pytest.CaptureFixture[str]
) -> None:
    out_path = tmp_path / "missing" / "out.csv"
    if where == "a folder":
        out_path = tmp_path / "folder.csv"
        out_path.mkdir()
    argv = [a.format(m=out_path) for a in argv]
    if argv[0] != "proxy":
        argv += ["--store", str(tmp_path)]  # never the user's own
    code, out, err = run_cli(capsys, *argv)
    assert (code, out) == (1, ""), (code, out, err)
    one_error(err, argv[0], f"cannot write {out_path}")
    assert not (tmp_path / "missing").exists()


#: every command that reads a scenario file, with {f} where the file goes
SCENARIO_READERS = [
    ["scenarios", "validate", "{f}"],
    ["scenarios", "show", "{f}"],
    ["serve-scenario", "{f}"],
    ["proxy", "--scenario", "{f}", "--upstream-url", "http://127.0.0.1:9/mcp"],
    ["workbench", "run", "{f}", "--no-telemetry"],
    ["workbench", "suite", "--scenarios", "{f}", "--no-telemetry"],
]


@pytest.mark.parametrize("argv", SCENARIO_READERS, ids=lambda a: " ".join(a[:2]))
def test_a_scenario_file_that_does_not_validate_is_exit_1_in_every_command(
    tmp_path: Path, argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """`scenarios validate` said 1 for it, `proxy`, `serve-scenario` and `workbench` 2, as if
    the command line were wrong: a file's contents are input the command cannot use (1, as a
    model or rules file that does not load); bad usage (2) is the command line's."""
    broken = tmp_path / "broken.json"
    broken.write_text('{"format": "toolwatch-scenario/1", "id": "x"}')
    argv = [a.format(f=broken) for a in argv]
    if argv[0] == "workbench":
        argv += ["--store", str(tmp_path / "store")]  # never the user's own
    code, _, err = run_cli(capsys, *argv)
    assert code == 1, (code, err)
    assert "Traceback" not in err and "broken.json" in err
    assert "'checks' is a required property" in err or "not valid" in err, err


def test_verbose_works_after_a_sub_action(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``toolwatch store verify -v`` was "unrecognized arguments: -v"."""
    for argv in (["store", "verify", "-v"], ["pins", "list", "-v"], ["store", "info", "-v"]):
        code, _, err = run_cli(capsys, *argv, "--store", str(store))
        assert code == 0, (argv, err)
    code, _, err = run_cli(capsys, "scenarios", "validate", "-v")
    assert code == 0, err


def test_rules_errors_name_the_rule_and_the_field(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "rules.toml"
    bad.write_text('[[rule]]\nname = "x"\nsql = "SELECT 1 AS n"\nwindow = "10m"\nthreshold = 1\n')
    code, _, err = run_cli(capsys, "rules", "check", str(bad), "--store", str(store))
    assert code == 1
    one_error(err, "rules", "rule 1 (x)", "column named value")
    bad.write_text("[[rule]\n")
    code, _, err = run_cli(capsys, "collector", "--store", str(store), "--rules", str(bad))
    assert code == 1
    one_error(err, "collector", "not valid TOML")
    bad.write_text(
        '[[rule]]\nname = "x"\nsql = "SELECT 1 AS value"\nwindow = "10m"\nthreshold = 1\n'
    )
    for moment in ("0001-01-01T00:00", "9999-12-31T23:00"):  # OverflowError, exit 70, before
        code, _, err = run_cli(
            capsys, "rules", "check", str(bad), "--store", str(store), "--at", moment
        )
        assert code == 2
        one_error(err, "rules", f"--at '{moment}' is outside 1970-01-01 to 9900-12-31")


@pytest.fixture
def broken_command(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A command whose code has a bug (what no user input should reach)."""

    def run(_args: Any) -> int:
        return 1 // 0

    module = SimpleNamespace(add_arguments=lambda p: None, run=run)
    monkeypatch.setattr(cli, "_load", lambda name: module)
    yield


@pytest.mark.usefixtures("broken_command")
def test_a_bug_is_one_line_with_a_hint_and_verbose_shows_the_traceback(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, _, err = run_cli(capsys, "stats")
    assert code == 70
    one_error(err, "stats", "unexpected ZeroDivisionError", "toolwatch -v")
    for argv in (["-v", "stats"], ["stats", "-v"]):
        code, _, err = run_cli(capsys, *argv)
        assert code == 70
        assert "Traceback (most recent call last)" in err and "1 // 0" in err
        assert err.splitlines()[-1].startswith("toolwatch stats: unexpected ZeroDivisionError")


def test_verbose_shows_the_traceback_of_a_user_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run_cli(capsys, "stats", "--store", str(tmp_path / "typo"), "-v")
    assert code == 1
    assert "Traceback" in err and "StoreError" in err
    assert err.splitlines()[-1] == f"toolwatch stats: no store at {tmp_path / 'typo'}"


@pytest.mark.parametrize(
    ("argv", "name", "code"),
    [
        (["score", "--model", "{file}"], "deep.json", 1),
        (["rules", "check", "{file}"], "deep.toml", 1),
    ],
)
def test_a_file_nested_too_deeply_is_one_line_not_a_bug(
    store: Path, tmp_path: Path, argv: list[str], name: str, code: int
) -> None:
    """Both said "unexpected RecursionError … (a bug)" with exit 70."""
    deep = "[" * 100_000 + "]" * 100_000
    path = tmp_path / name
    path.write_text(deep if name.endswith(".json") else f"a = {deep}\n")
    args = [a.replace("{file}", str(path)) for a in argv]
    done = run_process(*args, "--store", str(store))
    assert done.returncode == code, done.stderr
    one_error(done.stderr, argv[0], str(path), "nested too deeply to read")
