"""``toolwatch scenarios list|validate|show``: the fault-scenario library.

``validate`` with no path checks the packaged library; with paths (files or directories) it
checks those, in either format, and ``-`` reads JSON documents from standard input (one, JSON
Lines, or several one after another). Every problem is printed as
``file: /json/pointer: message``; the exit code is 1 when any file is invalid.

``show --json`` prints scenarios in toolwatch's format (an AgentCheck template comes out
converted), one JSON document each: the packaged library with no argument, else every file,
directory or packaged id given. Exit codes as ``validate``'s: 1 when a file is invalid (the
valid ones are still shown) or an argument names no file, directory or packaged id.
Its output validates, so a round trip is one pipe::

    toolwatch scenarios show --json tests/fixtures/agentcheck/templates \\
        | toolwatch scenarios validate -
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolwatch.injection.faults.taxonomy import FAULT_ACTIONS, FAULT_NAMES
from toolwatch.usage import UserError
from toolwatch.words import counted

if TYPE_CHECKING:  # the library is imported when the command runs: `--help` needs no mcp
    from toolwatch.injection.faults.scenario import Scenario, ScenarioError

HELP = "list, validate and show fault scenarios"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    ls = sub.add_parser("list", help="list scenarios (packaged library unless --path)")
    ls.add_argument("--path", nargs="*", default=None, help="scenario files or directories")
    ls.add_argument("--fault", choices=sorted(FAULT_ACTIONS), help="only this fault type")
    ls.add_argument("--domain", help="only this domain")
    ls.add_argument("--json", action="store_true", help="one JSON object per line")
    val = sub.add_parser("validate", help="check scenario files (schema + semantics)")
    val.add_argument(
        "paths",
        nargs="*",
        metavar="PATH",
        help="files or directories; - reads standard input (default: the packaged library)",
    )
    show = sub.add_parser("show", help="print scenarios (toolwatch format)")
    show.add_argument(
        "scenarios",
        nargs="*",
        metavar="FILE|DIR|ID",
        help="scenario files, directories or packaged ids (default: the packaged library)",
    )
    show.add_argument("--json", action="store_true", help="the full scenarios as JSON")


def run(args: argparse.Namespace) -> int:
    if args.action == "validate":
        _require_paths(args.paths)
        return _validate(args.paths)
    if args.action == "show":
        return _show(args.scenarios, as_json=args.json)
    _require_paths(args.path)
    return _list(args)


def _require_paths(paths: list[str] | None) -> None:
    """A path argument that names nothing is refused naming it (it is not a scenario that
    fails), exit 1 as a missing input is for every command; a directory without a scenario file
    in it is refused as ``show`` refuses it, not passed over as if it had held valid scenarios."""
    from toolwatch.injection.faults.library import iter_scenario_paths

    missing = [raw for raw in paths or () if raw != "-" and not Path(raw).exists()]
    if missing:
        raise UserError(f"no such file or directory: {', '.join(missing)}")
    empty = [
        raw
        for raw in paths or ()
        if raw != "-" and Path(raw).is_dir() and next(iter_scenario_paths([raw]), None) is None
    ]
    if empty:
        raise UserError(f"no scenario files (*.json) found in {', '.join(empty)}")


def _load(paths: list[str] | None) -> tuple[list[Scenario], list[str]]:
    from toolwatch.injection.faults.library import iter_scenario_paths, load_library, load_scenario
    from toolwatch.injection.faults.scenario import ScenarioError

    if not paths:
        try:
            return load_library(), []
        except ScenarioError as exc:
            return [], [str(exc)]
    scenarios, errors = [], []
    for path in iter_scenario_paths(paths):
        try:
            scenarios.append(load_scenario(path))
        except ScenarioError as exc:
            errors.append(str(exc))
    return scenarios, errors


def _list(args: argparse.Namespace) -> int:
    scenarios, errors = _load(args.path)
    for error in errors:
        print(error, file=sys.stderr)
    shown = [
        s
        for s in scenarios
        if (args.fault is None or s.fault_type == args.fault)
        and (args.domain is None or s.domain == args.domain)
    ]
    for s in shown:
        if args.json:
            row = {
                "id": s.id,
                "fault_type": s.fault_type,
                "action": s.fault.action,
                "domain": s.domain,
                "tool": s.fault.tool,
                "occurrence": s.fault.occurrence.to_json(),
                "source": s.source,
            }
            print(json.dumps(row))
        else:
            print(f"{s.id:32} {s.fault_type} {s.fault.action:32} {s.domain:18} {s.fault.tool}")
    if not args.json:
        print(counted(len(shown), "scenario"), file=sys.stderr)
    return 1 if errors else 0


Loader = Callable[[], "Scenario"]


def _sources(paths: list[str]) -> Iterator[tuple[str, Loader]]:
    """(name, loader) for every scenario the arguments name; a loader raises
    :class:`ScenarioError` for a bad one."""
    from toolwatch.injection.faults.library import (
        iter_documents,
        iter_scenario_paths,
        library_files,
        load_scenario,
        parse_scenario,
    )
    from toolwatch.injection.faults.scenario import ScenarioError

    if not paths:
        for t in library_files():
            name = f"scenarios/{t.name}"
            yield name, partial(_parse_text, t, name)
        return
    for raw in paths:
        if raw == "-":
            try:
                for name, data in iter_documents(sys.stdin.read(), "<stdin>"):
                    yield name, partial(parse_scenario, data, name)
            except ScenarioError as exc:
                yield exc.source, partial(_raise, exc)
            continue
        for path in iter_scenario_paths([raw]):
            yield str(path), partial(load_scenario, path)


def _parse_text(traversable: Any, name: str) -> Scenario:
    from toolwatch.injection.faults.library import parse_text

    return parse_text(traversable.read_text(encoding="utf-8"), name)


def _raise(exc: ScenarioError) -> Scenario:
    raise exc


def _validate(paths: list[str]) -> int:
    from toolwatch.injection.faults.library import distinct_scenarios

    bad = total = 0
    counts: Counter[str] = Counter()
    for scenario, problem in distinct_scenarios(_sources(paths)):
        total += 1
        if scenario is None:
            bad += 1
            print(problem, file=sys.stderr)
            continue
        counts[scenario.fault_type] += 1
    if not total:
        print(
            "toolwatch scenarios validate: no scenario documents on standard input", file=sys.stderr
        )
        return 1
    per_type = ", ".join(f"{fid} {counts[fid]}" for fid in FAULT_ACTIONS if counts[fid])
    print(f"{total - bad} valid, {bad} invalid" + (f" ({per_type})" if per_type else ""))
    return 1 if bad else 0


def _require_refs(refs: list[str]) -> None:
    """A reference that names nothing (no such path and no packaged id) is refused naming it,
    exit 1 as a missing input is (a file that exists but is invalid is exit 1 too, as
    ``validate`` says it)."""
    from toolwatch.injection.faults.library import find_scenario
    from toolwatch.injection.faults.scenario import ScenarioError

    missing = []
    for ref in refs:
        if Path(ref).exists():
            continue
        try:
            find_scenario(ref)
        except ScenarioError:
            missing.append(ref)
    if missing:
        raise UserError(
            f"no such file, directory or packaged scenario id: {', '.join(missing)} "
            "(`toolwatch scenarios list` shows the ids)"
        )


def _show(refs: list[str], *, as_json: bool) -> int:
    from toolwatch.injection.faults.codec import scenario_to_json
    from toolwatch.injection.faults.library import (
        find_scenario,
        iter_scenario_paths,
        load_library,
        load_scenario,
    )
    from toolwatch.injection.faults.scenario import ScenarioError

    _require_refs(refs)
    scenarios: list[Scenario] = []
    failed = False
    if not refs:
        scenarios = load_library()
    for ref in refs:
        loads = (
            [partial(load_scenario, p) for p in iter_scenario_paths([ref])]
            if Path(ref).is_dir()
            else [partial(find_scenario, ref)]
        )
        if not loads:
            raise UserError(f"no scenario files (*.json) found in {ref}")
        for load in loads:
            try:
                scenarios.append(load())
            except ScenarioError as exc:
                print(exc, file=sys.stderr)
                failed = True
    for s in scenarios:
        if as_json:
            print(json.dumps(scenario_to_json(s), indent=2, ensure_ascii=False))
        else:
            _describe(s)
    return 1 if failed else 0


def _describe(s: Scenario) -> None:
    from toolwatch.injection.faults.engine import FaultEngine

    print(f"{s.id}  [{s.fault_type} {FAULT_NAMES[s.fault_type]}]  domain {s.domain}  ({s.source})")
    print(f"task: {s.task}")
    for t in s.tools:
        mark = "*" if t.name == s.fault.tool else " "
        args = ", ".join((t.input_schema.get("properties") or {}).keys())
        print(f" {mark} {t.name}({args})")
    print(f"fault: {FaultEngine.for_scenario(s).describe()}")  # the proxy's own armed line
    print(f"pass: {s.scoring.minimum_pass_criterion}")
    print(f"fail: {s.scoring.clear_failure_signal}")
    for b in s.scoring.acceptable_behaviors:
        print(f"  ok: {b}")
