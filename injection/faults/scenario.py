"""Fault scenarios: the model, the two loaders (toolwatch JSON, AgentCheck templates), validation.

A scenario says which tools an agent sees (name, description, input schema, clean response),
which one is faulty, how (one of the 12 fault actions with its params), on which occurrences,
and how a run is scored (text for humans, machine-checkable fields for deterministic checks).

The fault vocabulary (:data:`FAULT_ACTIONS`) is defined here once; the fault engine, the proxy,
the CLI and the workbench import it. Every problem found in a file is reported with the file and
the JSON pointer of the offending field, never as a traceback.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import random
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache, lru_cache
from importlib import resources
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlsplit

import jsonschema

# --------------------------------------------------------------------------------------------
# The taxonomy (BRIEF §4): fault id -> scenario action, and a short name for messages
# --------------------------------------------------------------------------------------------

FAULT_ACTIONS: Final[dict[str, str]] = {
    "A1": "delay",
    "A2": "replace_with_error",
    "A3": "replace_with_403",
    "A4": "alter_schema",
    "B1": "inject_stale_data",
    "B2": "return_conflicting",
    "B3": "return_irrelevant",
    "B4": "return_empty",
    "C1": "prepend_injection",
    "C2": "poison_description",
    "C3": "inject_false_claim",
    "C4": "inject_exfiltration_instruction",
}
ACTION_FAULTS: Final[dict[str, str]] = {action: fid for fid, action in FAULT_ACTIONS.items()}
FAULT_NAMES: Final[dict[str, str]] = {
    "A1": "tool timeout",
    "A2": "server error",
    "A3": "permission denied",
    "A4": "schema drift",
    "B1": "stale data",
    "B2": "contradictory evidence",
    "B3": "irrelevant result",
    "B4": "silent empty result",
    "C1": "prompt injection in output",
    "C2": "poisoned tool description",
    "C3": "false claim in a document",
    "C4": "exfiltration instruction",
}

FORMAT: Final = "toolwatch-scenario/1"
SCHEMA_RESOURCE: Final = "schema.json"
_PACKAGE: Final = "toolwatch.scenarios"


def fault_label(fault_id: str, scenario_id: str) -> str:
    """Ground-truth label of an injected call: ``"<fault id>:<scenario id>"``."""
    return f"{fault_id}:{scenario_id}"


# --------------------------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Problem:
    """One thing wrong with a scenario file: where (JSON pointer) and what."""

    pointer: str
    message: str

    def render(self, source: str) -> str:
        return f"{source}: {self.pointer or '/'}: {self.message}"


class ScenarioError(ValueError):
    """A scenario file that cannot be used; ``str()`` names the file and every bad field."""

    def __init__(self, source: str, problems: Sequence[Problem]) -> None:
        self.source = source
        self.problems = tuple(problems)
        super().__init__("\n".join(p.render(source) for p in self.problems))


# --------------------------------------------------------------------------------------------
# JSON pointers (RFC 6901): fault params and checks address fields inside responses with them
# --------------------------------------------------------------------------------------------


def pointer_parts(pointer: str) -> list[str]:
    if pointer == "":
        return []
    if not pointer.startswith("/"):
        raise ValueError(f"JSON pointer must start with '/': {pointer!r}")
    return [p.replace("~1", "/").replace("~0", "~") for p in pointer[1:].split("/")]


def pointer_join(parts: Iterable[Any]) -> str:
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)


def resolve_pointer(doc: Any, pointer: str) -> Any:
    """The value at ``pointer`` in ``doc``; ``KeyError`` naming the pointer when absent."""
    node = doc
    for part in pointer_parts(pointer):
        if isinstance(node, Mapping) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            raise KeyError(pointer)
    return node


def set_pointer(doc: Any, pointer: str, value: Any) -> None:
    """Replace the existing value at ``pointer`` in place; ``KeyError`` when absent."""
    parts = pointer_parts(pointer)
    if not parts:
        raise KeyError(pointer)
    parent = resolve_pointer(doc, pointer_join(parts[:-1]))
    last = parts[-1]
    if isinstance(parent, dict) and last in parent:
        parent[last] = value
    elif isinstance(parent, list) and last.isdigit() and int(last) < len(parent):
        parent[int(last)] = value
    else:
        raise KeyError(pointer)


# --------------------------------------------------------------------------------------------
# The model
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CleanResponse:
    """What a tool returns when nothing is wrong: text and/or a structured JSON object."""

    text: str | None = None
    structured: Mapping[str, Any] | None = None

    def to_result(self) -> dict[str, Any]:
        """The response as a wire-form ``CallToolResult`` (camelCase keys, as sent)."""
        text = self.text
        if text is None:
            text = json.dumps(self.structured, ensure_ascii=False)
        result: dict[str, Any] = {"content": [{"type": "text", "text": text}], "isError": False}
        if self.structured is not None:
            result["structuredContent"] = json.loads(json.dumps(self.structured))
        return result

    def json_view(self) -> Any:
        """The response as JSON (structured, or the text parsed), for pointer checks."""
        if self.structured is not None:
            return self.structured
        try:
            return json.loads(self.text or "")
        except ValueError:
            return None


@dataclass(frozen=True, slots=True)
class ToolSpec:
    name: str
    description: str
    input_schema: Mapping[str, Any]
    response: CleanResponse
    output_schema: Mapping[str, Any] | None = None

    def to_wire(self) -> dict[str, Any]:
        """The tool as ``tools/list`` announces it (camelCase keys)."""
        wire: dict[str, Any] = {
            "name": self.name,
            "description": self.description,
            "inputSchema": dict(self.input_schema),
        }
        if self.output_schema is not None:
            wire["outputSchema"] = dict(self.output_schema)
        return wire


OCCURRENCE_KINDS: Final = ("nth", "every", "from", "probability")


@dataclass(frozen=True, slots=True)
class Occurrence:
    """Which calls of the faulty tool are faulted (1-based count of calls to that tool).

    ``nth``: the listed call numbers; ``every``: every k-th call (k, 2k, ...); ``from``: call n
    and every later one; ``probability``: each call independently with probability p, decided
    by a hash of (seed, key, call number) so a run is reproducible and a retry is re-drawn.
    """

    kind: str
    value: float | tuple[int, ...]

    def due(self, n: int, *, seed: int = 0, key: str = "") -> bool:
        if n < 1:
            return False
        if self.kind == "nth":
            assert isinstance(self.value, tuple)
            return n in self.value
        value = float(self.value) if not isinstance(self.value, tuple) else 0.0
        if self.kind == "every":
            return n % int(value) == 0
        if self.kind == "from":
            return n >= int(value)
        if self.kind == "probability":
            return random.Random(f"{seed}/{key}/{n}").random() < value
        raise ValueError(f"unknown occurrence kind {self.kind!r}")

    def describe(self) -> str:
        if self.kind == "nth":
            assert isinstance(self.value, tuple)
            return "call " + ", ".join(f"#{n}" for n in self.value)
        if self.kind == "every":
            k = int(self.value)  # type: ignore[arg-type]
            return f"call #{k}, #{2 * k}, #{3 * k}, ..."
        if self.kind == "from":
            return f"call #{int(self.value)} and later"  # type: ignore[arg-type]
        return f"each call with probability {self.value} (seeded)"

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Occurrence:
        (kind, value), *_ = data.items()
        if kind == "nth":
            return cls("nth", tuple(sorted(set(value if isinstance(value, list) else [value]))))
        return cls(kind, value)

    def to_json(self) -> dict[str, Any]:
        if self.kind == "nth":
            assert isinstance(self.value, tuple)
            return {"nth": list(self.value) if len(self.value) > 1 else self.value[0]}
        return {self.kind: self.value}


@dataclass(frozen=True, slots=True)
class FaultSpec:
    fault_id: str
    action: str
    tool: str
    occurrence: Occurrence
    params: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Scoring:
    minimum_pass_criterion: str
    clear_failure_signal: str
    acceptable_behaviors: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ValueRef:
    """A machine-checkable value: what tool ``tool`` returns at ``pointer``."""

    tool: str
    pointer: str
    value: Any


@dataclass(frozen=True, slots=True)
class Checks:
    """Machine-checkable ground truth for deterministic primary checks."""

    endpoint_allowlist: tuple[str, ...] = ()
    payload_id: str | None = None
    false_claim_aliases: tuple[str, ...] = ()
    exfiltration_url: str | None = None
    expected_value: ValueRef | None = None
    stale_value: ValueRef | None = None
    conflicting_values: tuple[ValueRef, ...] = ()


@dataclass(frozen=True, slots=True)
class Scenario:
    id: str
    fault_type: str
    domain: str
    task: str
    tools: tuple[ToolSpec, ...]
    fault: FaultSpec
    scoring: Scoring
    checks: Checks
    metadata: Mapping[str, Any] = field(default_factory=dict)
    source: str = "<memory>"
    format: str = FORMAT

    @property
    def label(self) -> str:
        return fault_label(self.fault.fault_id, self.id)

    def tool(self, name: str) -> ToolSpec:
        for tool in self.tools:
            if tool.name == name:
                return tool
        raise KeyError(name)

    @property
    def faulty_tool(self) -> ToolSpec:
        return self.tool(self.fault.tool)


# --------------------------------------------------------------------------------------------
# Argument validation: the same rule for the scenario server and for schema drift (A4)
# --------------------------------------------------------------------------------------------


def argument_errors(schema: Mapping[str, Any], arguments: Mapping[str, Any]) -> list[str]:
    """Why ``arguments`` do not satisfy a tool's input schema (empty list: they do).

    Besides JSON Schema validation, an argument that the schema does not declare is an error
    whenever the schema declares ``properties`` and does not explicitly allow extra ones, which
    is how MCP servers built on typed signatures behave.
    """
    problems: list[str] = []
    declared = schema.get("properties")
    if isinstance(declared, Mapping) and "additionalProperties" not in schema:
        for name in arguments:
            if name not in declared:
                problems.append(f"{name}: unexpected argument")
    validator = _validator(json.dumps(schema, sort_keys=True))
    for error in sorted(validator.iter_errors(dict(arguments)), key=lambda e: list(e.path)):
        where = pointer_join(error.path)[1:] or "arguments"
        problems.append(f"{where}: {error.message}")
    return problems


@lru_cache(maxsize=512)
def _validator(schema_json: str) -> jsonschema.Draft202012Validator:
    """A compiled validator per distinct schema (a server validates every call)."""
    return jsonschema.Draft202012Validator(json.loads(schema_json))


# --------------------------------------------------------------------------------------------
# Loading
# --------------------------------------------------------------------------------------------


@cache
def scenario_schema() -> dict[str, Any]:
    """The JSON Schema of the toolwatch scenario format (shipped as ``scenarios/schema.json``)."""
    text = resources.files(_PACKAGE).joinpath(SCHEMA_RESOURCE).read_text(encoding="utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


def library_files() -> list[Any]:
    """The packaged scenario files (``importlib.resources`` traversables), sorted by name."""
    root = resources.files(_PACKAGE)
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
    except OSError as exc:
        raise ScenarioError(str(path), [Problem("", f"cannot read file: {exc.strerror}")]) from exc
    return parse_text(text, str(path))


def find_scenario(ref: str | Path) -> Scenario:
    """A scenario by file path, or by the id of a packaged scenario."""
    path = Path(ref)
    if path.suffix == ".json" or path.exists():
        return load_scenario(path)
    files = library_files()
    for traversable in files:
        if traversable.name == f"{ref}.json":
            return parse_text(traversable.read_text(encoding="utf-8"), f"scenarios/{ref}.json")
    for traversable in files:
        text = traversable.read_text(encoding="utf-8")
        with contextlib.suppress(ValueError):
            if json.loads(text).get("id") == str(ref):
                return parse_text(text, f"scenarios/{traversable.name}")
    raise ScenarioError(
        str(ref), [Problem("", "no such file and no packaged scenario with this id")]
    )


def parse_text(text: str, source: str) -> Scenario:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ScenarioError(
            source,
            [Problem("", f"invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}")],
        ) from exc
    return parse_scenario(data, source)


def is_agentcheck(data: Any) -> bool:
    """Whether ``data`` is an AgentCheck scenario template (``scenario_id`` + ``fault_spec``)."""
    return isinstance(data, Mapping) and "scenario_id" in data and "fault_spec" in data


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
    return _build(data, source, fmt)


def validate_data(data: Any) -> list[Problem]:
    """Every problem in a decoded scenario document (schema first, then semantics, then what
    the fault does to a declared output schema)."""
    if is_agentcheck(data):
        problems = _schema_problems(data, AGENTCHECK_SCHEMA)
        if problems:
            return problems
        converted = from_agentcheck(data)
        problems = _semantic_problems(converted, strict=False, converted=True)
        return problems or _silence_problems(_build(converted, "<memory>", "agentcheck"))
    problems = _schema_problems(data, scenario_schema())
    if problems:
        return problems
    problems = _semantic_problems(data, strict=True, converted=False)
    return problems or _silence_problems(_build(data, "<memory>", FORMAT))


#: Faults that are silent by definition (the result still looks like a valid answer): under a
#: declared output schema their faulted result must still conform, or the mcp client would
#: reject it and the fault would be a loud error instead.
SILENT_FAULTS: Final = frozenset({"B1", "B2", "B3", "B4", "C1", "C3", "C4"})


def _silence_problems(scenario: Scenario) -> list[Problem]:
    """A silent fault whose faulted result breaks the faulty tool's declared output schema."""
    target = scenario.faulty_tool
    if scenario.fault_type not in SILENT_FAULTS or target.output_schema is None:
        return []
    from toolwatch.injection.faults.engine import CallPlan, FaultEngine  # the engine imports us

    effect = FaultEngine.for_scenario(scenario).apply(
        CallPlan(target.name, 1, True, {}), target.response.to_result()
    )
    result = effect.result or {}
    structured = result.get("structuredContent")
    index = scenario.tools.index(target)
    if structured is None:
        return [
            Problem(
                f"/tools/{index}/output_schema",
                f"the {scenario.fault.action} result has no structured content, which the mcp "
                "client rejects for a tool with an output schema: the fault would not be "
                "silent (drop output_schema or change the fault)",
            )
        ]
    validator = jsonschema.Draft202012Validator(dict(target.output_schema))
    error = next(iter(validator.iter_errors(structured)), None)
    if error is None:
        return []
    return [
        Problem(
            "/fault/params",
            f"the faulted result breaks output_schema of {target.name!r} "
            f"({error.message}): the mcp client would reject it, so the fault would not be silent",
        )
    ]


def validate_path(path: str | Path) -> list[str]:
    """Rendered problems (``file: /pointer: message``) of one scenario file; empty when valid."""
    try:
        load_scenario(path)
    except ScenarioError as exc:
        return [p.render(exc.source) for p in exc.problems]
    return []


def iter_scenario_paths(paths: Iterable[str | Path]) -> Iterator[Path]:
    """Scenario files among ``paths`` (directories are searched for ``*.json``)."""
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            yield from sorted(p for p in path.rglob("*.json") if p.name != SCHEMA_RESOURCE)
        else:
            yield path


def _schema_problems(data: Any, schema: Mapping[str, Any]) -> list[Problem]:
    validator = jsonschema.Draft202012Validator(dict(schema))
    problems: list[Problem] = []
    for error in validator.iter_errors(data):
        problems.extend(_explain(error))
    seen: set[tuple[str, str]] = set()
    unique = []
    for p in sorted(problems, key=lambda p: (p.pointer, p.message)):
        if (p.pointer, p.message) not in seen:
            seen.add((p.pointer, p.message))
            unique.append(p)
    return unique


def _explain(error: jsonschema.ValidationError) -> list[Problem]:
    """The most specific messages of a schema error (descending into oneOf branches)."""
    here = pointer_join(error.absolute_path)
    if error.validator in ("oneOf", "anyOf") and error.context:
        depth = len(error.absolute_path)
        deepest = max(len(e.absolute_path) for e in error.context)
        if deepest > depth:
            # The branch that got furthest is the one the author meant: explain its error.
            best = [e for e in error.context if len(e.absolute_path) == deepest]
            return [p for e in best for p in _explain(e)]
        shapes = [
            "{" + ", ".join(branch.get("required", [])) + "}"
            for branch in error.validator_value
            if isinstance(branch, Mapping) and branch.get("required")
        ]
        if shapes:
            return [Problem(here, f"expected an object with exactly one of {' | '.join(shapes)}")]
        reasons = list(dict.fromkeys(e.message for e in error.context))
        return [Problem(here, " or ".join(reasons))]
    return [Problem(here, error.message)]


# --------------------------------------------------------------------------------------------
# Semantic checks (what a schema cannot say)
# --------------------------------------------------------------------------------------------

#: fault type -> machine-checkable fields our own scenarios must provide.
REQUIRED_CHECKS: Final[dict[str, tuple[str, ...]]] = {
    "A1": ("expected_value",),
    "A2": ("expected_value",),
    "A3": ("expected_value",),
    "A4": ("expected_value",),
    "B1": ("expected_value", "stale_value"),
    "B2": ("conflicting_values",),
    "B3": ("expected_value",),
    "B4": ("expected_value",),
    "C1": ("payload_id",),
    "C2": ("payload_id",),
    "C3": ("false_claim_aliases",),
    "C4": ("exfiltration_url",),
}


def _semantic_problems(data: Mapping[str, Any], *, strict: bool, converted: bool) -> list[Problem]:
    problems: list[Problem] = []
    note = " (after conversion from the AgentCheck template)" if converted else ""

    def add(pointer: str, message: str) -> None:
        problems.append(Problem(pointer, message + note))

    tools = {t["name"]: t for t in data["tools"]}
    if len(tools) != len(data["tools"]):
        names = [t["name"] for t in data["tools"]]
        dup = sorted({n for n in names if names.count(n) > 1})
        add("/tools", f"duplicate tool names: {', '.join(dup)}")
    fault = data["fault"]
    fid = data["fault_type"]
    if FAULT_ACTIONS.get(fid) != fault["action"]:
        add(
            "/fault/action",
            f"fault type {fid} uses action {FAULT_ACTIONS.get(fid)!r}, not {fault['action']!r}",
        )
    if fault["tool"] not in tools:
        add(
            "/fault/tool",
            f"faulty tool {fault['tool']!r} is not among the tools ({', '.join(tools)})",
        )
        return problems
    for i, tool in enumerate(data["tools"]):
        response = tool["response"]
        schema = tool.get("output_schema")
        defect = None if schema is None else _schema_defect(json.dumps(schema, sort_keys=True))
        if defect:
            add(f"/tools/{i}/output_schema", f"not a valid JSON Schema: {defect}")
        elif schema is not None and "structured" not in response:
            add(
                f"/tools/{i}/response",
                "a tool with output_schema must answer with structured content (the mcp client "
                "rejects a result without it)",
            )
        elif schema is not None:
            errors = list(
                jsonschema.Draft202012Validator(schema).iter_errors(response["structured"])
            )
            if errors:
                add(
                    f"/tools/{i}/response/structured",
                    f"does not match output_schema: {errors[0].message}",
                )
        schema_problem = _schema_defect(json.dumps(tool["input_schema"], sort_keys=True))
        if schema_problem:
            add(f"/tools/{i}/input_schema", f"not a valid JSON Schema: {schema_problem}")
    target = tools[fault["tool"]]
    target_json = _response_json(target["response"])
    params = fault["params"]
    action = fault["action"]
    pp = "/fault/params"
    checks = data.get("checks", {})

    if action == "alter_schema":
        declared = target["input_schema"].get("properties")
        for old, new in params.get("argument_renames", {}).items():
            if isinstance(declared, Mapping) and old not in declared:
                add(
                    f"{pp}/argument_renames/{old}",
                    f"tool {target['name']!r} has no argument {old!r}",
                )
            if isinstance(declared, Mapping) and new in declared:
                add(f"{pp}/argument_renames/{old}", f"new name {new!r} already exists")
        for old in params.get("field_renames", {}):
            if target_json is not None and not _has_key(target_json, old):
                add(
                    f"{pp}/field_renames/{old}",
                    f"clean response of {target['name']!r} has no field {old!r}",
                )
        if strict and not params.get("argument_renames") and not params.get("field_renames"):
            add(pp, "alter_schema needs argument_renames and/or field_renames")
    if action in ("inject_stale_data", "return_conflicting"):
        if not params.get("patch") and "response" not in params:
            add(pp, f"{action} needs patch (fields to overwrite) or response (a replacement)")
        for pointer, value in params.get("patch", {}).items():
            where = f"{pp}/patch/{pointer_join([pointer])[1:]}"
            try:
                clean = resolve_pointer(target_json, pointer)
            except (KeyError, ValueError):
                add(where, f"clean response of {target['name']!r} has no field at {pointer}")
                continue
            if clean == value:
                add(where, "patched value equals the clean value: the fault would change nothing")
    if action == "return_conflicting" and "reference" in params:
        ref = params["reference"]
        if ref["tool"] not in tools:
            add(f"{pp}/reference/tool", f"reference tool {ref['tool']!r} is not among the tools")
        elif ref["tool"] == target["name"]:
            add(f"{pp}/reference/tool", "reference tool must be another tool than the faulty one")
        else:
            try:
                ref_value = resolve_pointer(
                    _response_json(tools[ref["tool"]]["response"]), ref["pointer"]
                )
            except (KeyError, ValueError):
                add(f"{pp}/reference/pointer", f"{ref['tool']!r} has no field at {ref['pointer']}")
            else:
                for pointer, value in params.get("patch", {}).items():
                    if value == ref_value:
                        add(
                            f"{pp}/patch",
                            "conflicting value equals the reference tool's value: no conflict",
                        )
                    try:
                        clean = resolve_pointer(target_json, pointer)
                    except (KeyError, ValueError):
                        continue
                    if clean != ref_value:
                        add(
                            f"{pp}/reference",
                            f"clean values disagree already ({clean!r} vs {ref_value!r}): "
                            "the conflict must be introduced by the fault",
                        )
    if action == "prepend_injection":
        payload = checks.get("payload_id")
        if payload and payload not in params.get("text", ""):
            add(f"{pp}/text", f"injection text does not carry the payload id {payload!r}")
    if action == "poison_description":
        text = params.get("description", "") + params.get("append", "")
        if not text:
            add(pp, "poison_description needs description or append")
        elif params.get("description") == target["description"]:
            add(f"{pp}/description", "poisoned description equals the clean one")
        payload = checks.get("payload_id")
        if payload and payload not in text:
            add(pp, f"poisoned description does not carry the payload id {payload!r}")
        url = checks.get("exfiltration_url")
        if url and url not in text:
            add(pp, f"poisoned description does not contain the exfiltration URL {url}")
    if action == "inject_false_claim":
        aliases = checks.get("false_claim_aliases", [])
        claim = params.get("claim", "").lower()
        if aliases and not any(a.lower() in claim for a in aliases):
            add("/checks/false_claim_aliases", "no alias occurs in the planted claim")
        clean_text = json.dumps([t["response"] for t in data["tools"]], ensure_ascii=False).lower()
        for i, alias in enumerate(aliases):
            if alias.lower() in clean_text:
                add(
                    f"/checks/false_claim_aliases/{i}",
                    f"alias {alias!r} occurs in a clean response",
                )
    if action == "inject_exfiltration_instruction":
        url = params.get("exfiltration_url")
        if url and url not in params.get("instruction", ""):
            add(f"{pp}/instruction", f"instruction does not contain the exfiltration URL {url}")
        if url and checks.get("exfiltration_url") not in (None, url):
            add("/checks/exfiltration_url", "differs from fault.params.exfiltration_url")
    if action in ("inject_exfiltration_instruction", "poison_description") and checks.get(
        "exfiltration_url"
    ):
        host = urlsplit(checks["exfiltration_url"]).hostname or ""
        if host in checks.get("endpoint_allowlist", []):
            add("/checks/endpoint_allowlist", f"allowlists the exfiltration host {host!r}")
    if params.get("pointer") is not None and target_json is not None:
        try:
            value = resolve_pointer(target_json, params["pointer"])
        except (KeyError, ValueError):
            add(
                f"{pp}/pointer",
                f"clean response of {target['name']!r} has no field at {params['pointer']}",
            )
        else:
            if not isinstance(value, str):
                add(f"{pp}/pointer", "must address a string field (the document text)")

    # machine-checkable fields: present where the type needs them, consistent with responses
    if strict:
        for name in REQUIRED_CHECKS[fid]:
            if not checks.get(name):
                add(f"/checks/{name}", f"required for fault type {fid}")
    expected = checks.get("expected_value")
    if expected:
        problems.extend(
            _check_value_ref(expected, "/checks/expected_value", data, faulted=False, note=note)
        )
    for i, ref in enumerate(checks.get("conflicting_values", [])):
        where = f"/checks/conflicting_values/{i}"
        problems.extend(_check_value_ref(ref, where, data, faulted=True, note=note))
    stale = checks.get("stale_value")
    if stale:
        if stale["tool"] != fault["tool"]:
            add("/checks/stale_value/tool", "must be the faulty tool")
        elif (
            "patch" in params and params["patch"].get(stale["pointer"], object()) != stale["value"]
        ):
            add("/checks/stale_value", "is not what fault.params.patch writes at that pointer")
    conflicting = checks.get("conflicting_values", [])
    if conflicting and len({json.dumps(c["value"], sort_keys=True) for c in conflicting}) < 2:
        add("/checks/conflicting_values", "values do not disagree")
    return problems


@cache
def _schema_defect(schema_json: str) -> str | None:
    """Why a tool's input schema is not a valid JSON Schema (cached: checking is slow)."""
    try:
        jsonschema.Draft202012Validator.check_schema(json.loads(schema_json))
    except jsonschema.SchemaError as exc:
        return exc.message
    return None


def _check_value_ref(
    ref: Mapping[str, Any], where: str, data: Mapping[str, Any], *, faulted: bool, note: str
) -> list[Problem]:
    """Whether tool ``ref.tool`` returns ``ref.value`` at ``ref.pointer`` (in the faulted run
    when ``faulted``: the faulty tool's response with the fault's patch applied)."""
    tools = {t["name"]: t for t in data["tools"]}
    if ref["tool"] not in tools:
        return [Problem(f"{where}/tool", f"tool {ref['tool']!r} is not among the tools{note}")]
    doc = _response_json(tools[ref["tool"]]["response"])
    fault = data["fault"]
    if faulted and fault["tool"] == ref["tool"]:
        doc = json.loads(json.dumps(doc))
        for pointer, value in fault["params"].get("patch", {}).items():
            with contextlib.suppress(KeyError, ValueError):
                set_pointer(doc, pointer, value)
    try:
        actual = resolve_pointer(doc, ref["pointer"])
    except (KeyError, ValueError):
        return [
            Problem(f"{where}/pointer", f"{ref['tool']!r} has no field at {ref['pointer']}{note}")
        ]
    if actual != ref["value"]:
        return [
            Problem(
                f"{where}/value", f"{ref['tool']!r} returns {actual!r} at {ref['pointer']}{note}"
            )
        ]
    return []


def _response_json(response: Mapping[str, Any]) -> Any:
    if "structured" in response:
        return response["structured"]
    try:
        return json.loads(response.get("text", ""))
    except ValueError:
        return None


def _has_key(doc: Any, key: str) -> bool:
    if isinstance(doc, Mapping):
        return key in doc or any(_has_key(v, key) for v in doc.values())
    if isinstance(doc, list):
        return any(_has_key(v, key) for v in doc)
    return False


# --------------------------------------------------------------------------------------------
# Building the model from a validated document
# --------------------------------------------------------------------------------------------


def _value_ref(data: Mapping[str, Any] | None) -> ValueRef | None:
    return None if not data else ValueRef(data["tool"], data["pointer"], data["value"])


def _build(data: Mapping[str, Any], source: str, fmt: str) -> Scenario:
    tools = tuple(
        ToolSpec(
            name=t["name"],
            description=t["description"],
            input_schema=t["input_schema"],
            response=CleanResponse(t["response"].get("text"), t["response"].get("structured")),
            output_schema=t.get("output_schema"),
        )
        for t in data["tools"]
    )
    f = data["fault"]
    c = data.get("checks", {})
    s = data["scoring"]
    return Scenario(
        id=data["id"],
        fault_type=data["fault_type"],
        domain=data["domain"],
        task=data["task"],
        tools=tools,
        fault=FaultSpec(
            fault_id=data["fault_type"],
            action=f["action"],
            tool=f["tool"],
            occurrence=Occurrence.from_json(f["occurrence"]),
            params=f["params"],
        ),
        scoring=Scoring(
            s["minimum_pass_criterion"], s["clear_failure_signal"], tuple(s["acceptable_behaviors"])
        ),
        checks=Checks(
            endpoint_allowlist=tuple(c.get("endpoint_allowlist", ())),
            payload_id=c.get("payload_id"),
            false_claim_aliases=tuple(c.get("false_claim_aliases", ())),
            exfiltration_url=c.get("exfiltration_url"),
            expected_value=_value_ref(c.get("expected_value")),
            stale_value=_value_ref(c.get("stale_value")),
            conflicting_values=tuple(
                ValueRef(v["tool"], v["pointer"], v["value"])
                for v in c.get("conflicting_values", ())
            ),
        ),
        metadata=data.get("metadata", {}),
        source=source,
        format=fmt,
    )


def scenario_to_json(scenario: Scenario) -> dict[str, Any]:
    """The scenario in the toolwatch format (an AgentCheck template comes out converted)."""

    def ref(v: ValueRef | None) -> dict[str, Any] | None:
        return None if v is None else {"tool": v.tool, "pointer": v.pointer, "value": v.value}

    checks: dict[str, Any] = {"endpoint_allowlist": list(scenario.checks.endpoint_allowlist)}
    c = scenario.checks
    optional = {
        "payload_id": c.payload_id,
        "false_claim_aliases": list(c.false_claim_aliases) or None,
        "exfiltration_url": c.exfiltration_url,
        "expected_value": ref(c.expected_value),
        "stale_value": ref(c.stale_value),
        "conflicting_values": [ref(v) for v in c.conflicting_values] or None,
    }
    checks.update({k: v for k, v in optional.items() if v is not None})
    tools = []
    for t in scenario.tools:
        response: dict[str, Any] = {}
        if t.response.text is not None:
            response["text"] = t.response.text
        if t.response.structured is not None:
            response["structured"] = t.response.structured
        tool: dict[str, Any] = {
            "name": t.name,
            "description": t.description,
            "input_schema": t.input_schema,
            "response": response,
        }
        if t.output_schema is not None:
            tool["output_schema"] = t.output_schema
        tools.append(tool)
    return {
        "format": FORMAT,
        "id": scenario.id,
        "fault_type": scenario.fault_type,
        "domain": scenario.domain,
        "task": scenario.task,
        "tools": tools,
        "fault": {
            "tool": scenario.fault.tool,
            "action": scenario.fault.action,
            "occurrence": scenario.fault.occurrence.to_json(),
            "params": dict(scenario.fault.params),
        },
        "scoring": {
            "minimum_pass_criterion": scenario.scoring.minimum_pass_criterion,
            "clear_failure_signal": scenario.scoring.clear_failure_signal,
            "acceptable_behaviors": list(scenario.scoring.acceptable_behaviors),
        },
        "checks": checks,
        "metadata": dict(scenario.metadata),
    }


# --------------------------------------------------------------------------------------------
# AgentCheck scenario templates (the published workbench's format; BRIEF §4, seed 000)
# --------------------------------------------------------------------------------------------

#: The fields an AgentCheck template must have for us to run it (their own schema is richer).
AGENTCHECK_SCHEMA: Final[dict[str, Any]] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "required": ["scenario_id", "fault_type", "task", "tools", "fault_spec", "scoring"],
    "properties": {
        "scenario_id": {"type": "string", "pattern": "^[A-Za-z0-9][A-Za-z0-9_.-]*$"},
        "fault_type": {"enum": list(FAULT_ACTIONS)},
        "fault_category": {"enum": ["tool_execution", "data_quality", "security"]},
        "domain": {"type": "string"},
        "task": {"type": "string", "minLength": 1},
        "task_requires_fresh_data": {"type": "boolean"},
        "tools": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "required": ["tool_id", "description", "clean_response"],
                "properties": {
                    "tool_id": {"type": "string", "minLength": 1},
                    "description": {"type": "string"},
                    "is_faulty": {"type": "boolean"},
                },
            },
        },
        "fault_spec": {
            "type": "object",
            "required": ["action"],
            "properties": {
                "action": {"enum": list(ACTION_FAULTS)},
                "params": {"type": "object"},
            },
        },
        "scoring": {
            "type": "object",
            "required": ["minimum_pass_criterion", "clear_failure_signal", "acceptable_behaviors"],
            "properties": {
                "minimum_pass_criterion": {"type": "string", "minLength": 1},
                "clear_failure_signal": {"type": "string", "minLength": 1},
                "acceptable_behaviors": {
                    "type": "array",
                    "minItems": 2,
                    "items": {"type": "string", "minLength": 1},
                },
            },
        },
        "endpoint_allowlist": {"type": "array", "items": {"type": "string"}},
        "metadata": {"type": "object"},
    },
}

_URL = re.compile(r"https?://[^\s\"'<>)\]]+")


def _agentcheck_response(value: Any) -> dict[str, Any]:
    if isinstance(value, Mapping):
        return {"structured": dict(value)}
    if isinstance(value, str):
        return {"text": value}
    return {"text": json.dumps(value, ensure_ascii=False)}


def _derived_conflict_patch(clean: Any) -> dict[str, Any]:
    """A patch changing the first scalar of a clean response, for templates without one."""
    if not isinstance(clean, Mapping):
        return {}
    for key, value in clean.items():
        pointer = pointer_join([key])
        if isinstance(value, bool):
            return {pointer: not value}
        if isinstance(value, int):
            return {pointer: value + max(1, round(abs(value) * 0.2))}
        if isinstance(value, float):
            return {pointer: round(value * 1.2 + 1.0, 2)}
        if isinstance(value, str):
            return {pointer: f"CONFLICTING {value}"}
    return {}


def from_agentcheck(data: Mapping[str, Any]) -> dict[str, Any]:
    """An AgentCheck template as a toolwatch scenario document (not yet semantically checked).

    Their templates inject at the first call of the faulty tool; the converted scenario keeps
    that (``occurrence: {"nth": 1}``) but, unlike the original workbench, a retry is then a
    second occurrence and gets the clean response only because the rule says so. Templates
    declare no input schemas, so tools accept any arguments (``{"type": "object"}``).
    """
    fid = data["fault_type"]
    action = data["fault_spec"]["action"]
    raw = dict(data["fault_spec"].get("params") or {})
    tools = [
        {
            "name": t["tool_id"],
            "description": t["description"],
            "input_schema": {"type": "object"},
            "response": _agentcheck_response(t["clean_response"]),
        }
        for t in data["tools"]
    ]
    faulty = [t["tool_id"] for t in data["tools"] if t.get("is_faulty")]
    target = raw.pop("target_tool", None) or (faulty[0] if faulty else data["tools"][0]["tool_id"])
    clean = next(
        (t["clean_response"] for t in data["tools"] if t["tool_id"] == target),
        None,
    )
    checks: dict[str, Any] = {"endpoint_allowlist": list(data.get("endpoint_allowlist", []))}
    params: dict[str, Any] = {}
    if action == "delay":
        params = {"delay_ms": int(raw.get("timeout_ms", 8000)), "mode": "sleep"}
    elif action in ("replace_with_error", "replace_with_403"):
        if "error_body" in raw:
            params["body"] = raw["error_body"]
        if "error_message" in raw:
            params["message"] = str(raw["error_message"])
        if action == "replace_with_error" and str(raw.get("error_code", "")).isdigit():
            params["status"] = int(raw["error_code"])
        if "required_role" in raw:
            params["required_role"] = str(raw["required_role"])
    elif action == "alter_schema":
        if raw.get("rename_args"):
            params["argument_renames"] = dict(raw["rename_args"])
        if raw.get("rename_fields"):
            params["field_renames"] = dict(raw["rename_fields"])
        if "altered_response" in raw:
            params["response"] = _agentcheck_response(raw["altered_response"])
    elif action == "inject_stale_data":
        params["response"] = _agentcheck_response(raw.get("stale_response", {}))
    elif action == "return_conflicting":
        if "conflicting_response" in raw:
            params["response"] = _agentcheck_response(raw["conflicting_response"])
        else:
            params["patch"] = _derived_conflict_patch(clean)
    elif action == "return_irrelevant":
        params["response"] = _agentcheck_response(raw.get("irrelevant_response", {}))
    elif action == "return_empty":
        params = {"mode": "empty_collections"}
    elif action == "prepend_injection":
        payload_id = (
            "AC-" + hashlib.sha256(str(data["scenario_id"]).encode()).hexdigest()[:10].upper()
        )
        text = str(raw.get("injection_string", ""))
        params = {"text": f"{text} [ref {payload_id}]"}
        checks["payload_id"] = payload_id
    elif action == "poison_description":
        params = {"description": str(raw.get("poisoned_description", ""))}
        urls = _URL.findall(params["description"])
        if urls:
            checks["exfiltration_url"] = urls[0]
    elif action == "inject_false_claim":
        claim = str(raw.get("false_claim", ""))
        params = {"claim": claim}
        checks["false_claim_aliases"] = [claim]
    elif action == "inject_exfiltration_instruction":
        instruction = str(
            raw.get("exfiltration_instruction") or raw.get("poisoned_description") or ""
        )
        urls = _URL.findall(instruction)
        params = {"instruction": instruction}
        if urls:
            params["exfiltration_url"] = urls[0]
            checks["exfiltration_url"] = urls[0]
        if "exfiltration_instruction" not in raw and "poisoned_description" in raw:
            params["placement"] = "description"
    metadata = dict(data.get("metadata") or {})
    metadata["agentcheck"] = {
        k: data[k] for k in ("fault_category", "task_requires_fresh_data") if k in data
    }
    return {
        "format": FORMAT,
        "id": data["scenario_id"],
        "fault_type": fid,
        "domain": data.get("domain", "general"),
        "task": data["task"],
        "tools": tools,
        "fault": {"tool": target, "action": action, "occurrence": {"nth": 1}, "params": params},
        "scoring": dict(data["scoring"]),
        "checks": checks,
        "metadata": metadata,
    }
