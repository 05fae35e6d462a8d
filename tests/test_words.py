"""A count with its noun, as every report, log line and page writes it."""

from __future__ import annotations

from toolwatch.words import counted, noun_for


def test_a_count_takes_the_singular_for_exactly_one() -> None:
    assert [counted(n, "alert") for n in (0, 1, 2, 8729)] == [
        "0 alerts",
        "1 alert",
        "2 alerts",
        "8,729 alerts",
    ]
    assert counted(1, "child", "children") == "1 child"
    assert counted(3, "child", "children") == "3 children"


def test_a_listed_noun_agrees_with_how_many_are_listed() -> None:
    assert noun_for(1, "field") == "field"
    assert noun_for(0, "field") == "fields"
    assert noun_for(2, "key") == "keys"
    assert noun_for(2, "index", "indices") == "indices"
