"""``toolwatch workbench``'s output paths: one it cannot use is said before the first run, in
one line, exit 1 (output it cannot use, as every command says it), nothing run nor stored; a
part of the install it lacks (a component, the packaged library), exit 1 too; and its own usage
errors, exit 2 through :class:`toolwatch.usage.UsageError`."""

from __future__ import annotations

import json
import logging
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from support.disk import NOBODY, as_unprivileged, world_readable_dir
from support.workbench import scenario
from toolwatch.cli import build_parser
from toolwatch.cli import main as cli_main
from toolwatch.injection.faults.codec import scenario_to_json
from toolwatch.usage import UsageError


@pytest.fixture(autouse=True)
def _sdk_log_level_restored() -> Iterator[None]:
    """``workbench`` quiets the in-process servers' INFO (``mcp.server`` at WARNING) for the
    rest of its process: run in the tests' process, that level is put back, or later tests of
    the SDK's log lines (tests/injection/proxy) see none."""
    logger = logging.getLogger("mcp.server")
    level = logger.level
    yield
    logger.setLevel(level)


def test_suite_json_it_cannot_write_is_refused_before_the_first_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``suite --json FILE`` is written after the whole suite: a path it could never write
    failed then (exit 1 with the OS's words, the summary lost); it is now said first, in one
    line, exit 1, nothing run nor stored."""
    folder = tmp_path / "scenarios"
    folder.mkdir()
    (folder / "a2.json").write_text(json.dumps(scenario_to_json(scenario("A2"))))
    store = tmp_path / "s"
    for out, why in [
        (tmp_path / "no-dir" / "out.json", f"no directory {tmp_path / 'no-dir'}"),
        (folder, "it is a directory"),
    ]:
        argv = ["workbench", "suite", "--scenarios", str(folder), "--agents", "naive"]
        argv += ["--store", str(store), "--no-telemetry", "--json", str(out)]
        assert cli_main(argv) == 1
        err = capsys.readouterr().err.strip()
        assert err == f"toolwatch workbench: --json: cannot write {out}: {why}"
    assert not store.exists()


def _suite_as_normal_user(root: Path, store: Path, out: Path) -> subprocess.CompletedProcess[str]:
    """``workbench suite --json out`` over one A2 scenario, run as a normal user in a real
    process (``nobody`` when the tests run as root: root's ``os.access`` says yes to all)."""
    folder = root / "scenarios"
    folder.mkdir()
    (folder / "a2.json").write_text(json.dumps(scenario_to_json(scenario("A2"))))
    argv = [sys.executable, "-m", "toolwatch", "workbench", "suite", "--agents", "naive"]
    argv += ["--scenarios", str(folder), "--store", str(store), "--no-telemetry"]
    return subprocess.run(
        as_unprivileged([*argv, "--json", str(out)]),
        capture_output=True,
        text=True,
        env={**os.environ, "HOME": str(root)},
        timeout=120,
    )


@pytest.mark.parametrize("what", ["read-only file", "read-only folder"])
def test_suite_json_without_permission_is_refused_as_a_normal_user(what: str) -> None:
    """The permission half of the check binds only for a normal user (root may write
    anything): the command is run as one (``nobody``, when the tests run as root), so a
    read-only ``--json`` file, or a new one in a folder it cannot write, is one line and exit
    1 before the first run: nothing stored, no progress bar, no summary."""
    with world_readable_dir() as root:
        outputs = root / "out"
        outputs.mkdir(mode=0o755 if what == "read-only folder" else 0o777)
        outputs.chmod(0o755 if what == "read-only folder" else 0o777)
        out = outputs / "summary.json"
        if what == "read-only file":
            out.write_text("{}\n")
            out.chmod(0o444)
            if os.geteuid() == 0:
                os.chown(out, NOBODY, NOBODY)  # its own file: only the mode says no
        store = outputs / "store"
        done = _suite_as_normal_user(root, store, out)
        why = "permission denied" if what == "read-only file" else f"{outputs} is not writable"
        assert done.stderr == f"toolwatch workbench: --json: cannot write {out}: {why}\n"
        assert done.returncode == 1 and done.stdout == ""
        assert not store.exists()
        assert not out.exists() or out.read_text() == "{}\n"


def test_suite_json_over_its_own_writable_file_in_a_read_only_folder_is_written() -> None:
    """Writing over an existing ``--json`` file opens the file, not its folder: a file the
    user may write, in a folder they may not, was refused before the first run (the folder's
    permission was asked even for a file already there); the suite now runs and writes it."""
    with world_readable_dir() as root:
        outputs = root / "out"
        outputs.mkdir()
        outputs.chmod(0o777)  # the store's folder: writable
        read_only = root / "read-only"
        read_only.mkdir()
        read_only.chmod(0o755)  # root's (as the tests run on CI): nobody may not write in it
        out = read_only / "summary.json"
        out.write_text("{}\n")
        out.chmod(0o644)
        if os.geteuid() == 0:
            os.chown(out, NOBODY, NOBODY)  # its own file, writable by its mode
        done = _suite_as_normal_user(root, outputs / "store", out)
        assert done.returncode == 0, done.stderr
        assert json.loads(out.read_text())["pass_matrix"]  # the summary, over the "{}" it held


USAGE_ERRORS = [
    (["suite", "--agents", ","], "--agents names no agent"),
    (
        ["suite", "--agents", "naive,nobody"],
        "unknown agent 'nobody'; choose from naive, careful, llm",
    ),
    (
        ["suite", "--detect", "--no-telemetry"],
        "--detect scores the runs' recorded calls: drop --no-telemetry",
    ),
    (
        ["run", "a2-legal-01", "--mitigation", "bogus"],
        "unknown mitigation bogus; choose from retry, schema, scan, verify or all",
    ),
]


@pytest.mark.parametrize(("argv", "message"), USAGE_ERRORS)
def test_its_own_usage_errors_are_usage_errors_exit_2_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    """The usage mistakes argparse cannot see (an agent list naming none or an unknown one,
    ``--detect`` without the spans it scores, an unknown mitigation) were a class of the
    command's own, printed and returned 2 by hand; they are :class:`UsageError` now, as in every
    other command, said by ``toolwatch.cli.main``: the same line, exit 2, nothing stored."""
    store = tmp_path / "s"
    full = ["workbench", *argv, "--store", str(store)]
    args = build_parser(full).parse_args(full)
    with pytest.raises(UsageError, match=f"^{re.escape(message)}$"):
        args._run(args)
    assert cli_main(full) == 2
    assert capsys.readouterr().err.splitlines() == [f"toolwatch workbench: {message}"]
    assert not store.exists()


#: a component the command imports when it runs, made unimportable in a fresh interpreter
MISSING_COMPONENTS = [
    (
        "uvicorn",
        ["run", "a2-legal-01"],
        "cannot record the runs' spans: the collector is not available (import of uvicorn "
        "halted; None in sys.modules); use --no-telemetry to run without them",
    ),
    (
        "toolwatch.detection.model.normal_model",
        ["suite", "--detect"],
        "--detect needs the detection component (import of "
        "toolwatch.detection.model.normal_model halted; None in sys.modules)",
    ),
]


@pytest.mark.parametrize(("module", "argv", "message"), MISSING_COMPONENTS)
def test_a_component_it_cannot_import_is_exit_1_not_usage(
    tmp_path: Path, module: str, argv: list[str], message: str
) -> None:
    """The collector the runs' spans go to and the detector ``--detect`` loads are parts of the
    install, not of the command line: without one the command cannot do its job, exit 1 as
    every command says a missing extra (it was 2, bad usage), in one line, nothing stored."""
    store = tmp_path / "s"
    code = (
        f"import sys; sys.modules[{module!r}] = None\n"
        "from toolwatch.cli import main\n"
        f"sys.exit(main(['workbench', *{argv!r}, '--store', {str(store)!r}]))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 1, out.stderr
    assert out.stderr.splitlines() == [f"toolwatch workbench: {message}"]
    assert not store.exists()


def test_an_empty_packaged_library_is_exit_1_not_usage(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``suite`` without ``--scenarios`` runs the packaged library; an install that packs none
    (read here from a real package holding no scenario file) is a broken install, not a wrong
    command line: exit 1 (it was 2), one line saying what to pass, nothing run nor stored."""
    from toolwatch.injection.faults import library

    monkeypatch.setattr(library, "LIBRARY_PACKAGE", "toolwatch.injection.commands")
    store = tmp_path / "s"
    argv = ["workbench", "suite", "--agents", "naive", "--store", str(store), "--no-telemetry"]
    assert cli_main(argv) == 1
    assert capsys.readouterr().err.splitlines() == [
        "toolwatch workbench: the packaged scenario library is empty; pass --scenarios"
    ]
    assert not store.exists()
