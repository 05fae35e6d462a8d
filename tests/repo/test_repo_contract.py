"""The repository's promises to a new user: README commands, CI, extras, `--help` everywhere."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from support.paths import MCP_TEST_SERVER, REPO
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
#: every module an extra brings, and zstandard (`toolwatch[zstd]`)
HEAVY = (*(m for mods in EXTRA_ONLY_MODULES.values() for m in mods), "zstandard")
_PRINT_HEAVY = f"import sys; print(','.join(m for m in {HEAVY!r} if m in sys.modules))\n"
#: what an agent in production does: every public name, a provider, instrument(), a call to
#: a server over stdio (a server of its own process would bring mcp's server logging: rich)
_AGENT = (
    "import anyio, sys, toolwatch, toolwatch.instrumentation as ti, toolwatch.record\n"
    "from mcp import Client, StdioServerParameters\n"
    "for name in ti.__all__: getattr(ti, name)\n"
    "ti.instrument(tracer_provider=ti.configure_otlp('http://127.0.0.1:9', shutdown_timeout=0))\n"
    f"server = StdioServerParameters(command=sys.executable, args=[{str(MCP_TEST_SERVER)!r}])\n"
    "async def main():\n"
    "    async with Client(server) as client:\n"
    "        with ti.model_response('r1'):\n"
    "            await client.call_tool('echo', {'text': 'x'})\n"
    "anyio.run(main)\n"
)


def test_importing_toolwatch_loads_no_heavy_dependency() -> None:
    out = subprocess.run(
        [sys.executable, "-c", "import toolwatch, toolwatch.instrumentation\n" + _PRINT_HEAVY],
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.strip() == ""


@pytest.mark.parametrize("how", ["code", "opentelemetry-instrument"])
def test_an_instrumented_agent_loads_no_module_of_an_extra(how: str) -> None:
    """Importing the package was all that was checked: every public instrumentation name,
    configure_otlp, instrument() and a call — in code or zero-code, where the entry point
    loads the instrumentor at start-up — must need nothing but the production install (this
    venv has every extra, so an import of one would go unnoticed by pip)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env["OTEL_TRACES_EXPORTER"] = "none"
    command = [sys.executable, "-c", _AGENT + _PRINT_HEAVY]
    if how != "code":
        command.insert(0, str(Path(sys.executable).with_name("opentelemetry-instrument")))
    out = subprocess.run(command, capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "", out.stdout


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


#: what no ``--help`` needs: the scorer's, the dashboard's and the data stack, the servers, the
#: MCP SDK, pydantic and the progress bar
HELP_HEAVY = (
    *("scipy", "river", "sklearn", "streamlit", "altair", "tqdm", "pydantic"),
    *("duckdb", "pyarrow", "numpy", "numba", "uvicorn", "mcp"),
    *("google.protobuf", "opentelemetry.exporter", "opentelemetry.sdk"),
)


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_subcommand_has_help_and_it_loads_only_the_options(command: str) -> None:
    """`store --help` loaded uvicorn, scipy and numba, `score` and `scan` river and scipy,
    `workbench` both and DuckDB (0.9 s), then `train`, `score`, `scan`, `experiment`, `replay`,
    `pins`, `rules`, `demo`, `import` and `app` DuckDB, Arrow and numpy, `collector`
    uvicorn, scipy and numba, and `proxy`, `serve-scenario`, `scenarios` and `workbench` the
    MCP SDK (the workbench Arrow and numpy too), `train` and `replay` pydantic, `import` the
    OTLP exporter with protobuf and the OpenTelemetry SDK (and the transcript parser): help needs
    only the argument definitions, so the rest is imported when the command runs
    (`benchmarks/bench_cli_help.py` times it)."""
    code = (
        "import sys\nfrom toolwatch.cli import main\n"
        f"try:\n    main([{command!r}, '--help'])\n"
        "except SystemExit as done:\n    code = done.code\n"
        f"print('loaded:', ','.join(m for m in {HELP_HEAVY!r} if m in sys.modules))\n"
        "sys.exit(code)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith(f"usage: toolwatch {command}")
    loaded = set(out.stdout.rpartition("loaded: ")[2].strip().split(",")) - {""}
    assert not loaded, loaded
