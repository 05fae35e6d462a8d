"""The lines experiment and replay say around a saved run: one wording, both commands."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest

from support.disk import read_only
from toolwatch.cli import main as cli_main
from toolwatch.collector.sources.simulator import simulate
from toolwatch.collector.store.parquet_store import Store
from toolwatch.injection.experiment.replay_storage import (
    REPLAYS,
    REPLAYS_SCHEMA,
    load_replay,
    replay_rows,
)
from toolwatch.injection.experiment.saved_runs import (
    require_writable,
    saved,
    saved_as_line,
    warn_if_data_changed,
)
from toolwatch.injection.experiment.storage import EXPERIMENTS, EXPERIMENTS_SCHEMA
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


def _edited_experiment(store: Store, run_id: str, **settings: object) -> None:
    """A copy of saved experiment ``run_id`` as run ``edited``, its settings changed, written
    with the store's own writer (as a hand edit or another version would leave it)."""
    rows = store.query(f"SELECT * FROM {EXPERIMENTS} WHERE run_id = ?", [run_id])
    rows = rows.select(EXPERIMENTS_SCHEMA.names).cast(EXPERIMENTS_SCHEMA)
    config = json.loads(rows.column("config_json")[0].as_py()) | settings
    for name, value in (("config_json", json.dumps(config)), ("run_id", "edited")):
        column = pa.array([value] * rows.num_rows, pa.string())
        rows = rows.set_column(rows.schema.get_field_index(name), name, column)
    store.append(EXPERIMENTS, rows, schema=EXPERIMENTS_SCHEMA, partition_by="created")


def _edited_replay(store: Store, run_id: str, part: str, **settings: object) -> str:
    """A copy of saved replay ``run_id`` as run ``edited-<part>``, ``settings`` changed in its
    config's ``part`` (``adaptive``, ``experiment``), written with the store's own writer."""
    data = load_replay(store, run_id)
    data["run_id"] = f"edited-{part}"
    data["config"][part] |= settings
    store.append(REPLAYS, replay_rows(data), schema=REPLAYS_SCHEMA, partition_by="created")
    return data["run_id"]


def _saved_run(command: str, args: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    assert cli_main([command, *args]) == 0
    return capsys.readouterr().out.strip().splitlines()[-1].split()[3]  # "saved as run ID ..."


def test_saved_settings_that_no_longer_validate_are_data_exit_1_naming_the_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """They exited 2 with the option's own message, as if the user had typed it."""
    store = Store(tmp_path / "store")
    store.append("calls", simulate(seed=2, scale=0.25))
    base = ["--store", str(store.root), "--split-shares", "0.44,0.07", "--seeds", "1"]
    base += ["--kinds", "burst"]
    experiment = _saved_run("experiment", [*base, "--bootstrap", "0", "--no-ablation"], capsys)
    replay = _saved_run("replay", base, capsys)
    _edited_experiment(store, experiment, head=0)
    edits = {
        _edited_replay(store, replay, "adaptive", half_life_days=-1): (
            "adaptive config: invalid half_life_days=-1.0 (needs > 0)"
        ),
        _edited_replay(store, replay, "experiment", head=0): (
            "--head 0 / --tail 10: need head >= 1, tail >= 0"
        ),
    }
    runs = [("experiment", "edited", "--head 0 / --tail 10: need head >= 1, tail >= 0")]
    runs += [("replay", run_id, why) for run_id, why in edits.items()]
    for command, run_id, why in runs:
        code = cli_main([command, "--store", str(store.root), "--rerun", run_id])
        out, err = capsys.readouterr()
        assert (code, out) == (1, ""), (command, run_id, err)
        assert err.strip().splitlines() == [
            f"toolwatch {command}: the saved {command} {run_id!r} in {store.root} has settings "
            f"this version cannot use: {why}"
        ]
