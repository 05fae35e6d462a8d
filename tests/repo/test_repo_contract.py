"""The repository's promises to a new user: README commands, CI, extras, `--help` everywhere."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib

import pytest

from support.paths import REPO
from toolwatch.cli import COMMANDS

ROOT = REPO


def _readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```bash\n(.*?)```", text, flags=re.S)
    lines = [ln for b in blocks[:2] for ln in b.splitlines() if ln and not ln.startswith("#")]
    return lines


def test_readme_opens_with_the_two_setup_inclusive_commands() -> None:
    demo, tests = _readme_commands()[:2]
    assert demo.startswith("python3 -m venv .venv") and demo.endswith("toolwatch demo")
    assert tests.startswith("python3 -m venv .venv") and "pytest" in tests


def test_ci_runs_the_readme_test_command() -> None:
    ci = (ROOT / ".ci" / "run").read_text()
    assert _readme_commands()[1] in ci.splitlines()


def test_production_install_is_instrumentation_only() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    base = " ".join(project["dependencies"]).lower()
    for heavy in ("duckdb", "pyarrow", "streamlit", "river", "numpy", "numba", "uvicorn"):
        assert heavy not in base, heavy
    assert {"collector", "detection", "app", "all", "dev"} <= set(project["optional-dependencies"])


def test_importing_toolwatch_loads_no_heavy_dependency() -> None:
    code = (
        "import sys, toolwatch, toolwatch.instrumentation, toolwatch.record;"
        "print(','.join(m for m in ('duckdb','pyarrow','streamlit','river','numpy','numba')"
        " if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


#: the modules only an extra brings, by the smallest extra that brings them (mcp's own
#: dependencies, starlette, uvicorn, pydantic, urllib3, are in the production install too)
EXTRA_ONLY_MODULES = {
    "collector": (
        "duckdb",
        "pyarrow",
        "numpy",
        "numba",
        "orjson",
        "tqdm",
        "rich",
        "prometheus_client",
    ),
    "detection": ("river", "scipy"),
    "app": ("streamlit", "altair"),
}
#: the extras each extra includes (pyproject's optional-dependencies)
INCLUDED = {"": set(), "collector": {"collector"}, "detection": {"collector", "detection"}}


@pytest.mark.parametrize(
    "command", sorted(c for c, (_, extra, _) in COMMANDS.items() if extra in INCLUDED)
)
def test_every_subcommand_loads_on_the_extra_it_names(command: str) -> None:
    """`toolwatch collector` (extra: collector) used to say "needs 'river' … (pip install
    'toolwatch[collector]')" on that very extra: importing any alerting room ran its __init__,
    which imported the live scorer."""
    extra = COMMANDS[command][1]
    blocked = [
        m for e, mods in EXTRA_ONLY_MODULES.items() if e not in INCLUDED[extra] for m in mods
    ]
    code = (
        f"import sys\nfor m in {blocked!r}: sys.modules[m] = None\n"
        f"from toolwatch.cli import main\nsys.exit(main([{command!r}, '--help']))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith(f"usage: toolwatch {command}")


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_subcommand_has_help(command: str) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "toolwatch", command, "--help"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert "usage: toolwatch" in out.stdout
