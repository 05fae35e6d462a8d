"""docs/ARCHITECTURE.md stays in step with the code it describes (tables, rooms, arrows)."""

from __future__ import annotations

import re

import pytest

from support.paths import REPO
from toolwatch import tables

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
