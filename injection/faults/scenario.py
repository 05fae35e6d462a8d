"""The fault scenario model: which tools an agent sees (name, description, input schema, clean
response), which one is faulty, how (one of the 12 fault actions with its params), on which
occurrences, and how a run is scored (text for humans, machine-checkable fields for deterministic
checks).
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache, lru_cache
from importlib import resources
from typing import Any, Final

import jsonschema

from toolwatch.documents import loads_json
from toolwatch.injection.faults.pointer import pointer_join
from toolwatch.injection.faults.taxonomy import fault_label
from toolwatch.usage import UserError
from toolwatch.words import counted

FORMAT: Final = "toolwatch-scenario/1"


# --------------------------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------------------------


#: The scenario format's JSON Schema, shipped beside the packaged library.
SCHEMA_RESOURCE: Final = "schema.json"
LIBRARY_PACKAGE: Final = "toolwatch.scenarios"


@cache
def scenario_schema() -> dict[str, Any]:
    """The JSON Schema of the toolwatch scenario format (shipped as ``scenarios/schema.json``)."""
    text = resources.files(LIBRARY_PACKAGE).joinpath(SCHEMA_RESOURCE).read_text(encoding="utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


#: The most of a value a problem message quotes: a whole document or a 10,000-character name
#: is shown by its first characters and an ellipsis.
QUOTE_LIMIT: Final = 60


def clip(text: str, limit: int = QUOTE_LIMIT) -> str:
    """``text`` cut to ``limit`` characters, the last one an ellipsis when cut."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def quote(value: Any) -> str:
    """``repr(value)`` as a problem message quotes it (cut by :func:`clip`)."""
    return clip(repr(value))


@dataclass(frozen=True, slots=True)
class Problem:
    """One thing wrong with a scenario file: where (JSON pointer) and what."""

    pointer: str
    message: str

    def render(self, source: str) -> str:
        return f"{source}: {self.pointer or '/'}: {self.message}"


class ScenarioError(UserError, ValueError):
    """A scenario file that cannot be used; ``str()`` names the file and every bad field."""

    def __init__(self, source: str, problems: Sequence[Problem]) -> None:
        self.source = source
        self.problems = tuple(problems)
        super().__init__("\n".join(p.render(source) for p in self.problems))


class ScenarioNotFound(ScenarioError):
    """A scenario reference that names nothing (no such file, nor for an id a packaged
    scenario): what the command found, exit 1 as for a missing store or model
    (:mod:`toolwatch.usage`), said in one line; not a scenario that fails validation."""

    def __init__(self, ref: str, what: str, hint: str = "") -> None:
        super().__init__(ref, [Problem("", what)])
        self.args = (f"{what}: {ref}" + (f" ({hint})" if hint else ""),)


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
            return loads_json(self.text or "")
        except ValueError:
            return None


@dataclass(frozen=True, slots=True)
class ToolSpec:
    name: str
    description: str
    input_schema: Mapping[str, Any]
    response: CleanResponse
    output_schema: Mapping[str, Any] | None = None
    #: MCP tool annotations as announced (``readOnlyHint``, ``destructiveHint``, ...)
    annotations: Mapping[str, Any] | None = None

    def to_wire(self) -> dict[str, Any]:
        """The tool as ``tools/list`` announces it (camelCase keys)."""
        wire: dict[str, Any] = {
            "name": self.name,
            "description": self.description,
            "inputSchema": dict(self.input_schema),
        }
        if self.output_schema is not None:
            wire["outputSchema"] = dict(self.output_schema)
        if self.annotations is not None:
            wire["annotations"] = dict(self.annotations)
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
class DateContext:
    """When the scenario happens: its "now" (the date of its fresh data), the date of the stale
    data a B1 fault serves, and whether the task needs current data at all."""

    requires_fresh_data: bool = False
    now: str | None = None
    stale_date: str | None = None


@dataclass(frozen=True, slots=True)
class Checks:
    """Machine-checkable ground truth for deterministic primary checks.

    ``target_tool`` is the tool a poisoned description is about (C2/C4: the victim, which may
    be another tool than the poisoner that carries the description).
    """

    endpoint_allowlist: tuple[str, ...] = ()
    payload_id: str | None = None
    false_claim_aliases: tuple[str, ...] = ()
    exfiltration_url: str | None = None
    expected_value: ValueRef | None = None
    stale_value: ValueRef | None = None
    conflicting_values: tuple[ValueRef, ...] = ()
    target_tool: str | None = None
    date_context: DateContext | None = None


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
    #: Where a converted scenario came from (``{"format": "agentcheck", ...}``), else None.
    origin: Mapping[str, Any] | None = None

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

    @property
    def target_tool(self) -> str:
        """The tool whose use the fault is about: a poisoned description's victim when the
        scenario names one, else the faulty tool."""
        return self.checks.target_tool or self.fault.tool


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


def validation_errors_text(tool: str, problems: Sequence[str]) -> str:
    """What a server built on typed signatures answers to arguments ``problems`` refuse
    ("Error executing tool T: 2 validation errors for T arguments", one line per problem):
    one wording for the scenario server and schema drift's refusal, which a client, a
    mitigation and the workbench's checks read alike."""
    count = counted(len(problems), "validation error")
    return f"Error executing tool {tool}: {count} for {tool} arguments\n" + "\n".join(problems)


@lru_cache(maxsize=512)
def _validator(schema_json: str) -> jsonschema.Draft202012Validator:
    """A compiled validator per distinct schema (a server validates every call)."""
    return jsonschema.Draft202012Validator(json.loads(schema_json))
