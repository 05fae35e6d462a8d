"""``toolwatch score`` / ``scan``: counts as the rest of the CLI writes them, and a window that
selects no session is said, with the days the store holds, instead of "0 calls scored"."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest

from support.detection import T0, workload
from toolwatch.cli import main
from toolwatch.collector.store.parquet_store import Store


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A trained store of more than a thousand calls, sessions starting Aug 4..8."""
    store = Store(tmp_path_factory.mktemp("score") / "store")
    store.append("calls", workload(1, 40, tools=8))
    store.append("calls", workload(2, 30, tools=8, start=T0 + timedelta(days=3)))
    assert main(["train", "--store", str(store.root), "--split-shares", "0.5,0.2"]) == 0
    return str(store.root)


def test_score_counts_with_thousands_separators(root: str, capsys) -> None:  # type: ignore[no-untyped-def]
    capsys.readouterr()
    calls, sessions = (
        Store(Path(root))
        .query("SELECT count(*) AS n, count(DISTINCT session_id) AS s FROM calls")
        .to_pylist()[0]
        .values()
    )
    assert calls >= 1000
    assert main(["score", "--store", root]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith(f"{calls:,} calls, {sessions} sessions scored with model ")


@pytest.mark.parametrize(
    ("command", "window", "said"),
    [
        (["score"], ["--from", "2027-01-01"], "from 2027-01-01"),
        (["scan", "--no-save"], ["--from", "2027-01-01"], "from 2027-01-01"),
        (["scan", "--no-save"], ["--to", "2026-08-01"], "up to 2026-08-01"),
        (
            ["score"],
            ["--from", "2026-08-01", "--to", "2026-08-02"],
            "from 2026-08-01 up to 2026-08-02",
        ),
    ],
)
def test_a_window_with_no_session_is_an_error_naming_the_stores_days(  # type: ignore[no-untyped-def]
    root: str, capsys, command: list[str], window: list[str], said: str
) -> None:
    capsys.readouterr()
    assert main([*command, "--store", root, *window]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err.strip() == (
        f"toolwatch {command[0]}: no session starts {said} (--from/--to): the store's 70 "
        "sessions start 2026-08-04..2026-08-08"
    )


def test_scan_text_and_json_carry_the_same_facts(root: str, capsys) -> None:  # type: ignore[no-untyped-def]
    """The text named the split's clock-ahead streams and the data's sources, the JSON neither
    (nor the split or window scanned); both now say all of it."""
    capsys.readouterr()
    for options, said in [
        (["--split-shares", "0.5,0.2"], "split: the test split of --split-shares 0.5,0.2"),
        (["--from", "2026-08-07"], "window: the sessions starting 2026-08-07.. (--from/--to)"),
    ]:
        assert main(["scan", "--store", root, "--no-save", *options]) == 0
        text = capsys.readouterr().out
        assert main(["scan", "--store", root, "--no-save", "--json", *options]) == 0
        doc = json.loads(capsys.readouterr().out)
        assert said in text.splitlines()[2]
        assert f"model: {doc['model_id']}" in text.splitlines()
        sources = ", ".join(f"{k} {n:,}" for k, n in doc["data"]["sources"].items())
        assert text.startswith(f"data: {doc['data']['calls']:,} calls ({sources})")
        assert doc["saved_to"] is None and "saved" not in text
        if doc["split"] is not None:
            assert doc["window"] is None
            assert doc["split"]["given"] == "--split-shares 0.5,0.2"
            assert doc["split"]["placed_by_arrival"] == 0
            assert f"(streams start {doc['split']['streams_span']})" in text
        else:
            assert doc["window"]["given"] == "2026-08-07.."
