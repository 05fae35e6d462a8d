"""docs/ARCHITECTURE.md stays in step with the code it describes (tables, rooms, arrows)."""

from __future__ import annotations

import argparse
import re
import threading
from pathlib import Path
from unittest.mock import MagicMock

import pytest

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


def _parsers(command: str) -> dict[tuple[str, ...], argparse.ArgumentParser]:
    """A subcommand's parser and its sub-actions' (``store verify``), keyed by their path."""
    top = cli.build_parser([command])
    found: dict[tuple[str, ...], argparse.ArgumentParser] = {}

    def walk(path: tuple[str, ...], parser: argparse.ArgumentParser) -> None:
        found[path] = parser
        for action in parser._actions:  # argparse has no public way to list sub-actions
            if isinstance(action, argparse._SubParsersAction):
                for name, child in action.choices.items():
                    walk((*path, name), child)

    walk((), top)
    return {path[1:]: parser for path, parser in found.items() if path[:1] == (command,)}


def test_every_option_a_documented_command_line_shows_exists() -> None:
    wrong = []
    parsers = {name: _parsers(name) for name in cli.COMMANDS}
    guide = (REPO / "docs" / "SCENARIOS.md").read_text()  # the scenario guide's commands too
    for doc in (DOC, (REPO / "README.md").read_text(), guide):
        for span in re.findall(r"`(?:\.venv/bin/)?toolwatch ([a-z][^`]*)`", doc):
            words = span.split()
            if words[0] not in parsers:
                continue
            known, path = parsers[words[0]], ()
            for word in words[1:]:
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
                        wrong.append(f"toolwatch {words[0]} {' '.join(path)} {option.group(1)}")
    assert wrong == []
