"""First paint of every dashboard page on a large store, in a real browser.

    python benchmarks/bench_app.py [--store PATH] [--sessions 16000] [--rounds 3] [--no-fail]
    python benchmarks/bench_app.py --existing STORE [STORE ...]   # measure stores as they are

Builds the store when it does not exist (``toolwatch simulate --sessions N`` ≈ 62 calls a
session, so 16,000 ≈ 1 M calls; then ``train``, ``scan`` — the per-stream scores the Sessions
page reads — a one-seed ``experiment`` and a one-seed ``replay``, the Replay page's weeks),
starts ``toolwatch app`` on it and opens each page (``support.browser.PAGES``, Replay too)
by URL in headless Chromium (Playwright on the system browser, ``tests/support/browser.py``),
after one warm-up load. Prints per page the median and worst time to first paint (title and
first data element visible) and to settled (script finished), and the same for a demo-sized
store (422 sessions, the demo's corpus) built alongside as the baseline of the same run, with
the large store's worst first paint as a ratio to it. Targets (the issue's): every page's worst
first paint ≤ 2 s on a store of the demo's size (up to 30,000 calls), ≤ 5 s on a larger one
(1 M calls); exits 1 when one is missed (``--no-fail``: report only). The stores are kept and
reused only when complete and of the size asked for: a store is built under ``<store>.partial``
and renamed when every step has finished, with ``bench-app.json`` naming its sessions; a
partial one (an interrupted run) or one of another size is rebuilt from scratch, and a path
that bench_app did not build is refused, untouched.
"""

from __future__ import annotations

import json
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

from toolwatch.usage import positive_int
from toolwatch.words import counted

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from support.browser import PAGES, browser, chromium_path, open_page, running_app

sys.path.insert(0, str(Path(__file__).resolve().parent))  # targets: the shared convention
from targets import Targets, add_no_fail, command_line

#: calls up to which a store is held to the demo store's target (the demo's: 26,354)
DEMO_SIZE_CALLS = 30_000
TARGET_DEMO_S = 2.0
TARGET_LARGE_S = 5.0


def toolwatch(*args: str) -> None:
    subprocess.run([sys.executable, "-m", "toolwatch", *args], check=True, capture_output=True)


#: written in a store once every step of its build has finished
BUILT = "bench-app.json"


class NotOurs(Exception):
    """The store path exists and bench_app did not build it."""


def built_sessions(store: Path) -> int | None:
    """The sessions of a complete store bench_app built at ``store`` (None: no such store)."""
    try:
        return int(json.loads((store / BUILT).read_text())["sessions"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def refuse_foreign(store: Path) -> None:
    """Raise NotOurs when ``store`` exists but bench_app did not build it."""
    if store.exists() and built_sessions(store) is None:
        raise NotOurs(f"{store} exists and was not built by bench_app: give another --store")


def build(store: Path, sessions: int) -> str:
    """Make ``store`` a complete store of ``sessions`` sessions; says how (reused, built)."""
    if built_sessions(store) == sessions:
        return "reused"
    refuse_foreign(store)
    partial = store.with_name(store.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)  # an interrupted build: never reused
    toolwatch("simulate", "--sessions", str(sessions), "--store", str(partial))
    toolwatch("train", "--store", str(partial))
    toolwatch("scan", "--store", str(partial))
    toolwatch("experiment", "--store", str(partial), "--seeds", "1", "--bootstrap", "200")
    toolwatch("replay", "--store", str(partial), "--seeds", "1")
    (partial / BUILT).write_text(json.dumps({"sessions": sessions}))
    if store.exists():  # ours, of another size
        shutil.rmtree(store)
    partial.rename(store)
    return "built"


def measure(store: Path, rounds: int, executable: str) -> dict[str, list[tuple[float, float]]]:
    times: dict[str, list[tuple[float, float]]] = {}
    log = store.parent / f"{store.name}-app.log"
    with running_app(store, log) as base, browser(executable) as page:
        open_page(page, base, "")
        for _ in range(rounds):
            for path in PAGES:
                loaded = open_page(page, base, path)
                times.setdefault(path, []).append((loaded.painted_s, loaded.settled_s))
    return times


def report(name: str, calls: int, times: dict[str, list[tuple[float, float]]]) -> float:
    """Prints one store's times; returns its worst first paint of any page."""
    print(f"{name}: {counted(calls, 'call')}")
    for path, found in times.items():
        painted = [p for p, _ in found]
        settled = [s for _, s in found]
        print(
            f"  {path or 'detection':<10} first paint median {statistics.median(painted):5.2f} s "
            f"(worst {max(painted):5.2f})   settled median {statistics.median(settled):5.2f} s "
            f"(worst {max(settled):5.2f})"
        )
    return max(p for found in times.values() for p, _ in found)


def check(targets: Targets, name: str, calls: int, worst: float) -> None:
    """A store's worst first paint against the target of its size."""
    target = TARGET_DEMO_S if calls <= DEMO_SIZE_CALLS else TARGET_LARGE_S
    targets.check(f"{name} ({counted(calls, 'call')}) worst first paint", worst, "<=", target, " s")


def calls_in(store: Path) -> int:
    from toolwatch.collector.store import Store

    return int(Store(store).query("SELECT count(*) AS n FROM calls").column("n")[0].as_py())


def main(argv: list[str] | None = None) -> int:
    parser = command_line(__doc__)
    parser.add_argument("--store", type=Path, default=Path("bench-app-store"))
    parser.add_argument("--sessions", type=positive_int, default=16_000)
    parser.add_argument("--baseline-sessions", type=positive_int, default=422)
    parser.add_argument("--rounds", type=positive_int, default=3)
    parser.add_argument("--existing", type=Path, nargs="+", help="measure these stores only")
    add_no_fail(parser)
    args = parser.parse_args(argv)
    executable = chromium_path()
    if executable is None:
        print("bench_app: needs chromium (apt-get install chromium)", file=sys.stderr)
        return 1
    targets = Targets()
    if args.existing:
        for store in args.existing:
            calls = calls_in(store)
            worst = report(str(store), calls, measure(store, args.rounds, executable))
            check(targets, str(store), calls, worst)
    else:
        baseline = args.store.with_name(args.store.name + "-baseline")
        wanted = ((baseline, args.baseline_sessions), (args.store, args.sessions))
        try:
            for store, _ in wanted:  # both, before an hour of building
                refuse_foreign(store)
        except NotOurs as exc:
            print(f"bench_app: {exc}", file=sys.stderr)
            return 2
        for store, sessions in wanted:
            print(f"{store}: {build(store, sessions)} ({counted(sessions, 'session')})", flush=True)
        measured = {}
        for name, store in (("baseline", baseline), ("large", args.store)):
            calls = calls_in(store)
            measured[name] = report(name, calls, measure(store, args.rounds, executable))
            check(targets, name, calls, measured[name])
        print(
            f"large / baseline worst first paint: {measured['large'] / measured['baseline']:.2f}x"
        )
    print(targets.report())
    return targets.exit_code(args.no_fail)


if __name__ == "__main__":
    sys.exit(main())
