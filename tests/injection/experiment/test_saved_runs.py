"""The lines experiment and replay say around a saved run: one wording, both commands."""

from __future__ import annotations

from pathlib import Path

import pytest

from support.disk import read_only
from toolwatch.collector.store.parquet_store import Store
from toolwatch.injection.experiment.saved_runs import (
    require_writable,
    saved,
    saved_as_line,
    warn_if_data_changed,
)
from toolwatch.usage import UserError


def test_unwritable_store_is_refused_naming_no_save(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "store").mkdir()
    store = Store(tmp_path / "store")
    require_writable(store, "replay")  # writable: no error
    read_only(monkeypatch, store.root)
    with pytest.raises(UserError) as raised:
        require_writable(store, "replay")
    assert str(raised.value) == (
        f"cannot write the store {store.root}: Read-only file system "
        "(--no-save runs the replay without saving it)"
    )


def test_changed_data_is_said_only_when_it_changed(capsys: pytest.CaptureFixture[str]) -> None:
    warn_if_data_changed("replay", "r1", None)
    warn_if_data_changed("replay", "r1", "")
    assert capsys.readouterr().err == ""
    warn_if_data_changed("replay", "r1", "calls 10 -> 12")
    err = capsys.readouterr().err
    assert err.startswith("toolwatch replay: the store's calls changed since run r1 ")
    assert "(calls 10 -> 12)" in err and err.count("\n") == 1


def test_saved_line_quotes_the_store_and_names_the_rerun(tmp_path: Path) -> None:
    store = Store(tmp_path / "my store")
    line = saved_as_line("experiment", tmp_path / "my store", store, "abc", "; more")
    assert line == (
        f"saved as run abc in {store.root} (re-run: toolwatch experiment "
        f"--store '{tmp_path / 'my store'}' --rerun abc; more)"
    )
    bare = saved_as_line("replay", None, store, "abc")
    assert bare.endswith("(re-run: toolwatch replay --rerun abc)")


def test_a_store_that_refuses_the_save_is_one_line_and_false(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def refuse() -> None:
        raise OSError(28, "No space left on device")

    assert saved("replay", lambda: None, "r1", tmp_path)
    assert capsys.readouterr().err == ""
    assert not saved("replay", refuse, "r1", tmp_path)
    assert capsys.readouterr().err == (
        "toolwatch replay: could not save results: [Errno 28] No space left on device\n"
    )
