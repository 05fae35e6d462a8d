"""A command run without the extra it needs says, in one line and before any work, which extra
to install: checked against the installed distributions, and for a module a command imports
only when it runs (a blocked module stands in for an uninstalled one)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from toolwatch import usage
from toolwatch.cli import COMMANDS, main
from toolwatch.usage import missing_distributions


def _without(monkeypatch: pytest.MonkeyPatch, *absent: str, **versions: str) -> None:
    """``absent`` not installed, the distributions named in ``versions`` at those versions."""
    real = usage._installed_version
    monkeypatch.setattr(
        usage,
        "_installed_version",
        lambda dist: None if dist in absent else versions.get(dist) or real(dist),
    )


def test_an_extra_is_its_distributions_and_those_of_the_extras_it_includes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _without(monkeypatch, "river", "streamlit")
    assert missing_distributions("collector") == []
    assert missing_distributions("detection") == ["river"]
    assert sorted(missing_distributions("app")) == ["river", "streamlit"]
    assert sorted(missing_distributions("all")) == ["river", "streamlit"]


def test_an_extra_installed_at_a_version_it_does_not_accept_is_named_with_both(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Only presence was checked: duckdb 1.1 (the collector needs >= 1.5) passed, and the
    command failed later, deep inside a query."""
    _without(monkeypatch, duckdb="1.1.3", pyarrow="18.0.0")
    assert usage.unmet_distributions("collector") == (
        [],
        [usage.Outdated("duckdb", ">=1.5", "1.1.3")],
    )
    assert missing_distributions("collector") == ["duckdb"]
    assert main(["sql", "--help"]) == 1
    assert capsys.readouterr().err == (
        "toolwatch sql: needs 'duckdb>=1.5' (1.1.3 is installed) "
        "(pip install -U 'toolwatch[collector]')\n"
    )
    assert usage._accepts(">=0.0.1a15", "0.0.1a15")  # rotel's: a pre-release can meet it
    assert not usage._accepts(">=1.2", "1.2.0rc1")
    _without(monkeypatch, "river", duckdb="0.9.0")
    assert main(["scan", "--help"]) == 1
    assert capsys.readouterr().err == (
        "toolwatch scan: needs 'river', which is not installed, and 'duckdb>=1.5' (0.9.0 is "
        "installed) (pip install -U 'toolwatch[detection]')\n"
    )


def test_every_extra_of_this_install_is_complete() -> None:
    for extra in {extra for _, extra, _ in COMMANDS.values() if extra}:
        assert missing_distributions(extra) == [], extra


def test_the_demo_names_its_extra_before_it_writes_anything(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Under `toolwatch[collector]` the demo used to simulate and train, then fail at 'train'
    with "ModuleNotFoundError: No module named 'river'"."""
    _without(monkeypatch, "river", "scipy")
    store = tmp_path / "demo"
    assert main(["demo", "--quick", "--store", str(store)]) == 1
    err = capsys.readouterr().err
    assert err == (
        "toolwatch demo: needs 'river', 'scipy', which are not installed "
        "(pip install 'toolwatch[all]')\n"
    )
    assert not store.exists()


def test_help_of_a_command_without_its_extra_is_the_install_hint(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _without(monkeypatch, "duckdb")
    assert main(["sql", "--help"]) == 1
    assert capsys.readouterr().err == (
        "toolwatch sql: needs 'duckdb', which is not installed "
        "(pip install 'toolwatch[collector]')\n"
    )


def test_a_long_list_of_missing_distributions_is_cut_after_three(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _without(monkeypatch, "duckdb", "pyarrow", "numpy", "numba", "orjson")
    assert main(["stats"]) == 1
    assert capsys.readouterr().err == (
        "toolwatch stats: needs 'duckdb', 'pyarrow', 'numpy' and 2 more, which are not installed "
        "(pip install 'toolwatch[collector]')\n"
    )


def test_a_module_imported_only_when_the_command_runs_is_a_hint_not_a_bug(
    tmp_path: Path,
) -> None:
    """`toolwatch replay` imports scipy inside run(): without it the answer was exit 70,
    "unexpected ModuleNotFoundError … (a bug …)"."""
    code = (
        "import sys; sys.modules['scipy'] = None\n"
        "from toolwatch.cli import main\n"
        f"sys.exit(main(['replay', '--store', {str(tmp_path)!r}]))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 1, out.stderr
    assert out.stderr == (
        "toolwatch replay: needs 'scipy', which is not installed "
        "(pip install 'toolwatch[detection]')\n"
    )


def test_our_own_missing_module_is_still_a_bug(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def broken(_args: object) -> int:
        raise ModuleNotFoundError("No module named 'toolwatch.gone'", name="toolwatch.gone")

    monkeypatch.setattr("toolwatch.injection.commands.scenarios.run", broken)
    assert main(["scenarios", "list"]) == 70
    assert "unexpected ModuleNotFoundError" in capsys.readouterr().err


def test_live_scoring_names_its_extra_as_every_command_does(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The collector runs on ``toolwatch[collector]``; ``--model`` needs the detection extra,
    and said so in its own longer words ("needs toolwatch.detection.alerting.live, which could
    not be imported (No module named 'river') …"); now the line every command gives."""
    _without(monkeypatch, "river")
    model = tmp_path / "model.json"
    model.write_text("{}")
    args = ["collector", "--store", str(tmp_path / "s"), "--port", "0", "--model", str(model)]
    assert main(args) == 1
    assert capsys.readouterr().err == (
        "toolwatch collector: live scoring (--model) needs 'river', which is not installed "
        "(pip install 'toolwatch[detection]')\n"
    )
