"""bench_app's stores: reused only when complete and of the size asked for, never another's.

The build steps (``toolwatch simulate``, ``train``, ``scan``, ``experiment``, ``replay``) are
replaced by a recorder that makes the store folder, so the test runs in milliseconds; a step can
be made to fail as a killed run would.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from support.benchmarks import load_benchmark

bench_app = load_benchmark("bench_app")


class Steps:
    """Records the toolwatch commands a build runs; ``fail`` makes one of them fail."""

    def __init__(self) -> None:
        self.run: list[tuple[str, Path]] = []
        self.fail: str | None = None

    def __call__(self, *args: str) -> None:
        store = Path(args[args.index("--store") + 1])
        if args[0] == self.fail:
            raise KeyboardInterrupt  # the run is stopped mid-build
        if args[0] == "simulate":
            store.mkdir()
            (store / "calls").mkdir()
        self.run.append((args[0], store))


@pytest.fixture
def steps(monkeypatch: pytest.MonkeyPatch) -> Steps:
    recorder = Steps()
    monkeypatch.setattr(bench_app, "toolwatch", recorder)
    return recorder


ALL = ["simulate", "train", "scan", "experiment", "replay"]


def test_an_interrupted_build_is_never_reused(tmp_path: Path, steps: Steps) -> None:
    store = tmp_path / "bench-app-store"
    steps.fail = "scan"
    with pytest.raises(KeyboardInterrupt):
        bench_app.build(store, 600)
    assert not store.exists()  # the partial store stays under its own name
    steps.fail, steps.run = None, []
    assert bench_app.build(store, 600) == "built"
    assert [step for step, _ in steps.run] == ALL  # from scratch, simulate first
    assert {where for _, where in steps.run} == {tmp_path / "bench-app-store.partial"}
    assert bench_app.built_sessions(store) == 600
    assert not (tmp_path / "bench-app-store.partial").exists()


def test_a_complete_store_is_reused_only_at_its_size(tmp_path: Path, steps: Steps) -> None:
    store = tmp_path / "s"
    assert bench_app.build(store, 600) == "built"
    steps.run = []
    assert bench_app.build(store, 600) == "reused"
    assert steps.run == []
    assert bench_app.build(store, 900) == "built"
    assert [step for step, _ in steps.run] == ALL
    assert bench_app.built_sessions(store) == 900


def test_a_path_bench_app_did_not_build_is_refused_untouched(
    tmp_path: Path,
    steps: Steps,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    store = tmp_path / "mine"
    store.mkdir()
    (store / "notes.txt").write_text("keep me")
    with pytest.raises(bench_app.NotOurs):
        bench_app.build(store, 600)
    assert steps.run == [] and (store / "notes.txt").read_text() == "keep me"
    monkeypatch.setattr(bench_app, "chromium_path", lambda: "/bin/true")
    code = bench_app.main(["--store", str(store), "--sessions", "600"])
    assert code == 2 and steps.run == []  # nothing built, not even the baseline
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line == f"bench_app: {store} exists and was not built by bench_app: give another --store"
    assert (store / "notes.txt").read_text() == "keep me"
