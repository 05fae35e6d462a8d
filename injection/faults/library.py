"""Loading scenarios: the shipped library (package data), single files in toolwatch's format or
AgentCheck's, and paths given on the command line.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterable, Iterator
from importlib import resources
from pathlib import Path
from typing import Any

from toolwatch.documents import loads_json, raw_decode_json
from toolwatch.injection.faults.agentcheck import from_agentcheck, is_agentcheck
from toolwatch.injection.faults.codec import build_scenario
from toolwatch.injection.faults.scenario import (
    FORMAT,
    LIBRARY_PACKAGE,
    SCHEMA_RESOURCE,
    Problem,
    Scenario,
    ScenarioError,
    ScenarioNotFound,
)
from toolwatch.injection.faults.validation import validate_data


def library_files() -> list[Any]:
    """The packaged scenario files (``importlib.resources`` traversables), sorted by name."""
    root = resources.files(LIBRARY_PACKAGE)
    return sorted(
        (p for p in root.iterdir() if p.name.endswith(".json") and p.name != SCHEMA_RESOURCE),
        key=lambda p: p.name,
    )


def load_library() -> list[Scenario]:
    """Every packaged scenario; a broken packaged file raises :class:`ScenarioError`."""
    return [
        parse_text(p.read_text(encoding="utf-8"), f"scenarios/{p.name}") for p in library_files()
    ]


def load_scenario(path: str | Path) -> Scenario:
    """A scenario file in either format; :class:`ScenarioError` names the file and fields."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise ScenarioNotFound(str(path), "no such file or directory") from exc
    except OSError as exc:
        raise ScenarioError(str(path), [Problem("", f"cannot read file: {exc.strerror}")]) from exc
    except UnicodeDecodeError as exc:
        problem = f"not UTF-8 text (byte {exc.object[exc.start]:#04x} at offset {exc.start})"
        raise ScenarioError(str(path), [Problem("", problem)]) from exc
    return parse_text(text, str(path))


def find_scenario(ref: str | Path) -> Scenario:
    """A scenario by file path, or by the id of a packaged scenario."""
    path = Path(ref)
    if path.suffix.lower() == ".json" or path.exists():
        return load_scenario(path)
    files = library_files()
    for traversable in files:
        if traversable.name == f"{ref}.json":
            return parse_text(traversable.read_text(encoding="utf-8"), f"scenarios/{ref}.json")
    for traversable in files:
        text = traversable.read_text(encoding="utf-8")
        with contextlib.suppress(ValueError):
            if loads_json(text).get("id") == str(ref):
                return parse_text(text, f"scenarios/{traversable.name}")
    raise ScenarioNotFound(
        str(ref), "no such file or packaged scenario id", "`toolwatch scenarios list` shows the ids"
    )


def parse_text(text: str, source: str) -> Scenario:
    try:
        data = loads_json(text)
    except json.JSONDecodeError as exc:
        raise ScenarioError(
            source,
            [Problem("", f"invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}")],
        ) from exc
    return parse_scenario(data, source)


def iter_documents(text: str, source: str) -> Iterator[tuple[str, Any]]:
    """(name, decoded JSON) for each JSON document in ``text`` — one document, JSON Lines, or
    documents one after another (what ``scenarios show --json`` prints for several); a
    document that does not decode ends the stream with :class:`ScenarioError`."""
    pos, n = 0, 0
    while True:
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if pos >= len(text):
            return
        n += 1
        name = f"{source}#{n}"
        try:
            data, pos = raw_decode_json(text, pos)
        except json.JSONDecodeError as exc:
            raise ScenarioError(
                name,
                [Problem("", f"invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}")],
            ) from exc
        yield name, data


def parse_scenario(data: Any, source: str = "<memory>") -> Scenario:
    """A validated :class:`Scenario` from decoded JSON in either format."""
    problems = validate_data(data)
    if problems:
        raise ScenarioError(source, problems)
    if is_agentcheck(data):
        data = from_agentcheck(data)
        fmt = "agentcheck"
    else:
        fmt = FORMAT
    return build_scenario(data, source, fmt)


def validate_path(path: str | Path) -> list[str]:
    """Rendered problems (``file: /pointer: message``) of one scenario file; empty when valid."""
    try:
        load_scenario(path)
    except ScenarioError as exc:
        return [p.render(exc.source) for p in exc.problems]
    return []


def iter_scenario_paths(paths: Iterable[str | Path]) -> Iterator[Path]:
    """Scenario files among ``paths``: directories are searched for ``.json`` files in any
    case (``X.JSON`` is read too: a file skipped without a word looked valid by its absence)."""
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            yield from sorted(p for p in path.rglob("*") if _is_scenario_file(p))
        else:
            yield path


def _is_scenario_file(path: Path) -> bool:
    return path.suffix.lower() == ".json" and path.name != SCHEMA_RESOURCE and path.is_file()


def distinct_scenarios(
    sources: Iterable[tuple[str, Callable[[], Scenario]]],
) -> Iterator[tuple[Scenario | None, str | None]]:
    """Each ``(name, loader)`` loaded, in order: the scenario, or why it cannot be used — its
    problems (:class:`ScenarioError`'s text) or an id an earlier source already has (a set of
    scenarios is keyed by id). ``scenarios validate`` and ``workbench suite`` judge alike."""
    ids: dict[str, str] = {}
    for name, load in sources:
        try:
            scenario = load()
        except ScenarioError as exc:
            yield None, str(exc)
            continue
        if scenario.id in ids:
            yield None, f"{name}: /id: duplicate id {scenario.id!r} (also {ids[scenario.id]})"
            continue
        ids[scenario.id] = name
        yield scenario, None
