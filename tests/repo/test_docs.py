"""docs/ARCHITECTURE.md stays in step with the code it describes (tables, rooms, arrows), and
every command line README.md and docs/*.md show is one the CLI takes."""

from __future__ import annotations

import argparse
import re
import threading
from pathlib import Path
from unittest.mock import MagicMock

import pytest

from support.parsers import all_parsers, command_parsers
from support.paths import REPO
from toolwatch import cli, tables
from toolwatch.collector.otlp import metrics
from toolwatch.collector.otlp.stats import CollectorStats
from toolwatch.collector.store import Store
from toolwatch.detection.alerting.live import LiveScorer

DOC = (REPO / "docs" / "ARCHITECTURE.md").read_text()


@pytest.mark.parametrize("name", sorted(tables.TABLES))
def test_every_registered_table_is_documented_as_generated(name: str) -> None:
    table = tables.TABLES[name]
    found = re.search(rf"<!-- table:{name} [^>]*-->\n(.*?)<!-- /table -->", DOC, re.S)
    assert found, f"docs/ARCHITECTURE.md has no generated block for table {name!r}"
    expected = tables.markdown(table)
    assert found.group(1) == expected, f"regenerate the {name!r} table:\n{expected}"


def test_the_markdown_names_every_column_and_its_attribute() -> None:
    text = tables.markdown(tables.CALLS)
    for f in tables.CALLS.fields:
        assert f"| `{f.name}` | {f.arrow} | {'yes' if f.nullable else 'no'} |" in text
        assert (f"`{f.attribute}`" if f.attribute else "(span field)") in text
    assert "span attribute" not in tables.markdown(tables.ALERTS)  # results have no attribute


def test_every_room_of_the_tree_is_in_the_rooms_listing() -> None:
    rooms = DOC[DOC.index("## Rooms") : DOC.index("## The arrows")]
    for init in REPO.glob("*/*/__init__.py"):
        component, room = init.parent.parent.name, init.parent.name
        if component in ("tests", "benchmarks", "build") or component.startswith("."):
            continue
        assert f"{room}/" in rooms, f"{component}/{room} is missing from docs' Rooms listing"


def _rooms_of(component: str) -> str:
    """The Rooms listing's lines of one component (its `component/` line to the next one)."""
    rooms = DOC[DOC.index("## Rooms") : DOC.index("## The arrows")]
    start = rooms.index(f"\n  {component}/")
    following = re.search(r"\n  [a-z_]+/", rooms[start + 1 :])
    return rooms[start : start + 1 + following.start()] if following else rooms[start:]


@pytest.mark.parametrize("command", sorted(cli.COMMANDS))
def test_every_subcommand_is_named_in_its_components_commands_room(command: str) -> None:
    module = cli.COMMANDS[command][0]  # toolwatch.<component>.commands.<module>
    component = module.split(".")[1]
    listed = _rooms_of(component).split("commands/", 1)[1]
    assert re.search(rf"(?<![\w-]){re.escape(command)}(?![\w-])", listed), (
        f"docs' Rooms listing does not name `{command}` under {component}/commands/"
    )


def _documented_metrics() -> set[str]:
    text = DOC[DOC.index("**Metrics** (`GET /metrics`") : DOC.index("**Log lines**")]
    names = re.findall(r"`(?:toolwatch_collector)?(_[a-z_]+)(?:\{[a-z]+\})?`", text)
    names += re.findall(r"`toolwatch_collector(_[a-z_]+)", text)
    return {metrics.PREFIX + n for n in names}


def test_the_metrics_listed_in_the_docs_are_the_ones_get_metrics_serves() -> None:
    render = metrics.metrics_renderer(CollectorStats(), threading.Lock(), None)
    families = set(re.findall(r"^# TYPE (\S+) ", render().decode(), flags=re.M))
    # the live scorer's come through the collector's extra hook (names only are read here)
    live = LiveScorer.metrics(MagicMock())
    families |= {
        f"{metrics.PREFIX}_{n}" + ("_total" if k == "counter" else "")
        for n, (k, _, _) in live.items()
    }
    assert _documented_metrics() == families


def test_the_views_have_the_columns_the_docs_name(tmp_path: Path) -> None:
    text = DOC[DOC.index("Views besides the tables") : DOC.index("## Package extras")]
    with Store(tmp_path).connect() as con:
        for view in ("sessions", "streams"):
            columns = [row[0] for row in con.execute(f"DESCRIBE {view}").fetchall()]
            assert [c for c in columns if f"`{c}`" not in text] == [], view
        for name, table in tables.TABLES.items():
            columns = [row[0] for row in con.execute(f'DESCRIBE "{name}"').fetchall()]
            assert columns == [*table.column_names, "date"], name  # `date`: said in the docs
    intro = DOC[DOC.index("## The tables") : DOC.index("**calls** —")]
    assert "`date`" in intro and "`Table.time_column`" in intro


def _environment_variables(text: str) -> set[str]:
    return set(re.findall(r"\bTOOLWATCH_[A-Z][A-Z_]*[A-Z]\b", text))


def test_every_environment_variable_the_code_reads_is_documented_and_no_other() -> None:
    code = set[str]()
    for path in REPO.rglob("*.py"):
        parts = path.relative_to(REPO).parts
        if parts[0] in ("tests", "benchmarks", "build") or parts[0].startswith("."):
            continue
        code |= set(re.findall(r"""["'](TOOLWATCH_[A-Z_]+)["']""", path.read_text()))
    documented = _environment_variables(DOC + (REPO / "README.md").read_text())
    assert documented == code


#: a command line in backticks, as a user copies it: `[.venv/bin/]toolwatch CMD …`, `python -m …`
#: (`toolwatch proxy: cannot connect …`, a message the docs quote, is not one: no colon after
#: the command)
INLINE = r"`(?:\.venv/bin/|python3? -m )?toolwatch ([a-z][\w-]*(?![\w:-])[^`]*)`"
#: a fenced block: its language and body
FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```", re.S | re.M)
#: options the docs name that belong to another program: why each is there
FOREIGN_OPTIONS = {
    "--browser": "Streamlit's `--browser.gatherUsageStats`, passed by `toolwatch app`"
}


def _user_docs() -> dict[str, str]:
    """README.md and every docs/*.md (the scenario guide's commands too)."""
    paths = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
    return {str(p.relative_to(REPO)): p.read_text() for p in paths}


def _command_lines(text: str) -> list[str]:
    """Every `toolwatch …` command a doc shows, after the word toolwatch: in backticks in the
    prose, and on the lines of its shell code blocks (a comment after `#` dropped, each
    command of a `&&` chain or a pipe apart)."""
    lines = re.findall(INLINE, FENCE.sub("", text))
    for language, body in FENCE.findall(text):
        if language not in ("bash", "sh", "shell", ""):
            continue
        for line in body.splitlines():
            for part in re.split(r"&&|\|", line.split(" #", 1)[0]):
                found = re.match(
                    r"\s*(?:\.venv/bin/|python3? -m )?toolwatch ([a-z][\w-]*(?![\w:-]).*)", part
                )
                if found:
                    lines.append(found.group(1).strip())
    return lines


def _wrong_words(line: str, known: dict[tuple[str, ...], argparse.ArgumentParser]) -> list[str]:
    """The sub-action or options of one command line its parsers do not know."""
    words, path, wrong = line.split()[1:], (), []
    actions = {p[0] for p in known if len(p) == 1}
    first = re.sub(r"[\\()\[\]]", "", words[0]) if words else ""
    if actions and re.fullmatch(r"[a-z][a-z|-]*", first):  # not FILE, "SQL", --x, …
        wrong += [a for a in first.split("|") if a and a not in actions]
    pieces = [piece for word in words for piece in re.split(r"\\?\|", word) if piece]
    # `verify [--quarantine]\|compact [--table T]`: each alternative read on its own
    for word in (piece.rstrip("])") for piece in pieces):
        if (*path[:-1], word) in known or (*path, word) in known:
            # `pins list | approve (--server S …)`: the sub-action named last
            path = (*path[:-1], word) if (*path[:-1], word) in known else (*path, word)
        option = re.match(r"\(?\[?(--[a-z][\w-]*)", word)
        if option:
            valid = {
                o
                for i in range(len(path) + 1)
                for a in known[path[:i]]._actions
                for o in a.option_strings
            }
            if option.group(1) not in valid:
                wrong.append(" ".join((*path, option.group(1))))
    return wrong


def wrong_command_lines(docs: dict[str, str]) -> list[str]:
    """``doc: toolwatch …`` for each command, sub-action or option a documented command line
    names that the parsers do not know; a command that does not exist is wrong too (it was
    passed over, so a doc could name a removed or misspelt command unseen)."""
    wrong = []
    parsers = {name: command_parsers(name) for name in cli.COMMANDS}
    for doc, text in docs.items():
        for line in _command_lines(text):
            command = line.split()[0]
            if command not in parsers:
                wrong.append(f"{doc}: toolwatch {command} (no such command)")
                continue
            wrong += [
                f"{doc}: toolwatch {command} {w}" for w in _wrong_words(line, parsers[command])
            ]
    return wrong


def test_every_command_sub_action_and_option_a_documented_command_line_shows_exists() -> None:
    assert wrong_command_lines(_user_docs()) == []


def test_a_documented_command_that_does_not_exist_is_wrong() -> None:
    """A made-up command or sub-action fails the check; a message quoted in the docs
    (`toolwatch proxy: cannot connect …`) is not a command line."""
    doc = (
        "Run `toolwatch frobnicate --deep`, then `toolwatch store tidy` "
        "(it says `toolwatch proxy: cannot connect`).\n"
        "```bash\ntoolwatch sql 'SELECT 1' && toolwatch stat\n```\n"
    )
    assert wrong_command_lines({"d.md": doc}) == [
        "d.md: toolwatch frobnicate (no such command)",
        "d.md: toolwatch store tidy",
        "d.md: toolwatch stat (no such command)",
    ]


def test_the_command_lines_in_shell_blocks_are_read() -> None:
    """The check above reads the fenced blocks a user copies from, not only the prose."""
    text = "`toolwatch sql --nope`\n```bash\nx && .venv/bin/toolwatch demo --quick  # --old\n```\n"
    assert _command_lines(text) == ["sql --nope", "demo --quick"]
    parsers = command_parsers("store")
    assert _wrong_words("store verify --deep", parsers) == []
    assert _wrong_words("store check --deep", parsers) == ["check", "--deep"]
    assert _wrong_words("store verify|tidy", parsers) == ["tidy"]
    assert _wrong_words("store verify [--deep]\\|compact [--min-files N]", parsers) == []
    assert _wrong_words("store verify [--deep]\\|compact [--quarantine]", parsers) == [
        "compact --quarantine"
    ]


def test_every_option_the_docs_name_belongs_to_a_command_or_a_script() -> None:
    """An option named on its own (`--split-shares 0.44,0.07` beside a command in prose) is one
    a toolwatch command or a benchmark script takes, so a renamed option cannot linger."""
    known = {o for p in all_parsers().values() for a in p._actions for o in a.option_strings}
    for script in (REPO / "benchmarks").glob("*.py"):
        known |= set(re.findall(r"[\"'](--[a-z][\w-]*)[\"']", script.read_text()))
    wrong = []
    for doc, text in _user_docs().items():
        for span in re.findall(r"`([^`]+)`", FENCE.sub("", text)):
            for option in re.findall(r"(?<![\w-])--[a-z][\w-]*", span):
                if option not in known and option not in FOREIGN_OPTIONS:
                    wrong.append(f"{doc}: {option} in `{span}`")
    assert wrong == []
