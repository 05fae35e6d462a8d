"""``toolwatch --help``'s list of commands reads as one list: each line an imperative fragment
in the same style, short enough for one line at 80 columns, and the same words the command's
module declares (``HELP``). Stragglers said "corpus facts beside the study's", "the study's
injection experiment", "MCP fault-injection proxy", "reproduce -> intervene -> mitigate runs";
``scenarios`` named only two of its three actions, and ``demo``'s module said one thing, the
list another (wrapped over two lines, as ``pins`` and ``rules`` were)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import toolwatch
from support.parsers import all_parsers
from toolwatch import cli
from toolwatch.cli import main

#: The verbs a command's help starts with (add one when a new command needs it).
VERBS = {
    "fit", "import", "list", "open", "rank", "receive", "replay", "run", "score", "serve",
    "show", "simulate", "validate", "verify", "write",
}  # fmt: skip
#: ``toolwatch --help`` indents a command's help by 18 columns: 62 more fit on an 80-column line.
WIDTH = 62


def _module_help(module: str) -> str:
    """The ``HELP`` a command's module declares, read from its source (no import: a command
    module may need an extra)."""
    path = Path(toolwatch.__file__).parent.joinpath(*module.split(".")[1:]).with_suffix(".py")
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "HELP" for t in node.targets
        ):
            return str(ast.literal_eval(node.value))
    raise AssertionError(f"{module} declares no HELP")


@pytest.mark.parametrize("command", list(cli.COMMANDS))
def test_each_commands_help_is_a_short_fragment_in_the_house_style(command: str) -> None:
    module, _, text = cli.COMMANDS[command]
    assert text == _module_help(module), "the list and the module say different things"
    assert text.split()[0].rstrip(",") in VERBS, f"{text!r}: start with what it does, a verb"
    assert text == text.strip() and "\n" not in text and not text.endswith(".")
    assert "->" not in text and len(text) <= WIDTH, f"{text!r}: {len(text)} > {WIDTH}"


def test_every_parsers_help_exits_0_and_describes_the_command(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Each command's and sub-action's ``--help`` exits 0 with its usage line."""
    for path in all_parsers():
        with pytest.raises(SystemExit) as done:
            main([*path, "--help"])
        out = capsys.readouterr().out
        assert done.value.code == 0, path
        assert out.startswith(f"usage: toolwatch {' '.join(path)}"), (path, out[:200])
