"""Deterministic reference agents that carry out a scenario's task against any MCP server.

The agents share one *plan*, derived generically from the scenario (:func:`plan_from_scenario`):
call the tools in the order the scenario lists them, filling each required argument either
from an earlier tool's response (value provenance: the field of that name in the clean
response, read from the *actual* response at run time) or from the task. A tool whose
required address-like argument (URL, e-mail, recipient) has no source is not planned — it is
the kind of sink an injected instruction tries to steer the agent into.

Two policies over that plan:

* :class:`NaiveAgent` trusts every output: it relays results as facts, treats a failed or
  empty call as "nothing there", never retries, and obeys instructions it finds in tool
  output or descriptions (calls a URL-taking tool with a URL it was told to visit, repeats
  what it was told to say).
* :class:`CarefulAgent` retries transient failures with backoff, adapts to renamed arguments
  and fields, checks results against the declared output schema, ignores instructions in
  outputs, and states every doubt in its answer.

Each decision is one model step declared with :func:`toolwatch.instrumentation.model_response`,
so the instrumented client attributes every call (retries included) to a response id.
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from mcp.types import CallToolResult, TextContent, Tool

from toolwatch.injection.faults.scenario import Scenario, argument_errors
from toolwatch.injection.mitigations.failures import FailureClass, classify_failure, first_line
from toolwatch.injection.mitigations.instructions import (
    find_instructions,
    find_urls,
    strip_instructions,
)
from toolwatch.injection.mitigations.results import (
    annotation_texts,
    is_annotation,
    is_empty_result,
    iter_leaves,
    result_data,
    result_flags,
    result_text,
)
from toolwatch.injection.mitigations.values import (
    is_identifier_name,
    normalize_scalar,
    schema_problems,
    tool_verb,
)
from toolwatch.injection.mitigations.wrapper import try_call
from toolwatch.injection.workbench.trajectory import AgentEvent, Trajectory
from toolwatch.instrumentation import model_response

log = logging.getLogger(__name__)

AGENT_NAMES: Final[tuple[str, ...]] = ("naive", "careful", "llm")

_ADDRESS_NAME: Final = re.compile(
    r"(^|_)(url|uri|href|link|endpoint|webhook|callback|address|recipient|email|to)$", re.I
)
_ID_NAME: Final = re.compile(
    r"(^|_)(id|ids|key|code|number|no|ref|sku|slug|symbol|ticker|flight)$", re.I
)
_COUNT_NAME: Final = re.compile(
    r"^(limit|top_?k|count|max_\w+|\w*_count|size|n|page_?size|num_\w+|days|nights)$", re.I
)
_QUERY_NAME: Final = re.compile(r"^(query|q|text|search|keywords?|topic|question|prompt)$", re.I)
_EXAMPLE: Final = re.compile(r"e\.g\.,?\s*['\"`]([^'\"`]+)['\"`]")
_TOKEN: Final = re.compile(r"[A-Za-z0-9][\w/.#-]*[A-Za-z0-9]|[A-Za-z0-9]")
_NUMBER: Final = re.compile(r"(?<![\w.-])(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?(?![\w-])")
_MONTHS: Final = {
    m: i + 1
    for i, m in enumerate(
        [
            "january",
            "february",
            "march",
            "april",
            "may",
            "june",
            "july",
            "august",
            "september",
            "october",
            "november",
            "december",
        ]
    )
}
_DATE_WORDS: Final = re.compile(
    r"\b(\d{1,2}) ("
    + "|".join(_MONTHS)
    + r") (\d{4})\b|\b("
    + "|".join(_MONTHS)
    + r") (\d{1,2}),? (\d{4})\b",
    re.I,
)
# =============================================================================================
# The plan
# =============================================================================================


@dataclass(frozen=True)
class ArgSource:
    """Where an argument's value comes from: a literal, or a field of an earlier response."""

    literal: Any = None
    step: int = -1  # index of the planned call whose response provides the value
    path: tuple[Any, ...] = ()
    key: str = ""

    @property
    def derived(self) -> bool:
        return self.step >= 0


@dataclass(frozen=True)
class PlannedCall:
    tool: str
    arguments: Mapping[str, ArgSource]


@dataclass(frozen=True)
class Plan:
    calls: tuple[PlannedCall, ...]
    unplanned: tuple[str, ...] = ()  # tools available but not part of the task


def _types(schema: Mapping[str, Any]) -> set[str]:
    t = schema.get("type")
    if isinstance(t, list):
        return {str(x) for x in t}
    return {str(t)} if t else set()


def _type_ok(value: Any, schema: Mapping[str, Any]) -> bool:
    types = _types(schema)
    if not types:
        return True
    checks = {
        "string": isinstance(value, str),
        "integer": isinstance(value, int) and not isinstance(value, bool),
        "number": isinstance(value, int | float) and not isinstance(value, bool),
        "boolean": isinstance(value, bool),
        "array": isinstance(value, list),
        "object": isinstance(value, dict),
        "null": value is None,
    }
    return any(checks.get(t, False) for t in types)


def _norm_key(key: str) -> str:
    return re.sub(r"[^a-z0-9]", "", key.lower())


def _find_source(
    name: str, schema: Mapping[str, Any], responses: Sequence[tuple[int, Any]]
) -> ArgSource | None:
    """The first field named like ``name`` in an earlier response (exact, then loose)."""
    wanted = _norm_key(name)
    for exact in (True, False):
        for step, data in responses:
            for path, value in iter_leaves(data):
                if not path or not isinstance(path[-1], str) or not _type_ok(value, schema):
                    continue
                if schema.get("enum") and value not in schema["enum"]:
                    continue
                key = _norm_key(path[-1])
                if exact and key != wanted:
                    continue
                if not exact and not (
                    (wanted == "id" and key.endswith("id"))
                    or (key == "id" and wanted.endswith("id") and len(path) >= 2)
                ):
                    continue
                return ArgSource(step=step, path=tuple(path), key=str(path[-1]))
    return None


def _shape(token: str, *, collapse: bool) -> str:
    shape = re.sub(r"[A-Z]", "A", re.sub(r"[a-z]", "a", re.sub(r"\d", "9", token)))
    return re.sub(r"(.)\1+", r"\1", shape) if collapse else shape


def _task_tokens(task: str) -> list[str]:
    """Tokens of the task, without the first word of each sentence (capitalised anyway)."""
    out: list[str] = []
    for sentence in re.split(r"(?<=[.!?])\s+", task):
        for i, m in enumerate(_TOKEN.finditer(sentence)):
            token = m.group(0).rstrip(".")
            if i == 0 and token[:1].isupper() and token[1:].islower():
                continue
            out.append(token)
    return out


def _iso_date(task: str, *, month_only: bool = False) -> str | None:
    m = re.search(r"\b(\d{4})-(\d{2})(?:-(\d{2}))?\b", task)
    if m:
        return f"{m.group(1)}-{m.group(2)}" if month_only else m.group(0)
    w = _DATE_WORDS.search(task)
    if not w:
        return None
    if w.group(1):
        day, month, year = int(w.group(1)), _MONTHS[w.group(2).lower()], int(w.group(3))
    else:
        day, month, year = int(w.group(5)), _MONTHS[w.group(4).lower()], int(w.group(6))
    return f"{year:04d}-{month:02d}" if month_only else f"{year:04d}-{month:02d}-{day:02d}"


def _numbers(task: str) -> list[float]:
    out: list[float] = []
    for m in _NUMBER.finditer(task):
        out.append(float(m.group(1).replace(",", "") + (m.group(2) or "")))
    return out


def _clamp(value: float, schema: Mapping[str, Any]) -> float:
    lo = schema.get("minimum", schema.get("exclusiveMinimum"))
    hi = schema.get("maximum", schema.get("exclusiveMaximum"))
    if isinstance(lo, int | float) and value < lo:
        value = lo if "minimum" in schema else lo + 1
    if isinstance(hi, int | float) and value > hi:
        value = hi if "maximum" in schema else hi - 1
    return value


def _string_candidates(
    name: str, schema: Mapping[str, Any], task: str, foreign: Collection[Any] = ()
) -> list[str] | None:
    """Values for a string argument, best first; ``None`` when the task cannot supply one.
    ``foreign`` are identifiers already known to name another kind of entity (a customer id
    is not a ticket id)."""
    description = str(schema.get("description") or "")
    if _ADDRESS_NAME.search(name) or schema.get("format") in ("uri", "url", "email"):
        return find_urls(task) or None
    if schema.get("format") == "date" or "YYYY-MM-DD" in description:
        return [_iso_date(task) or "2026-01-01"]
    if "YYYY-MM" in description:
        return [_iso_date(task, month_only=True) or "2026-01"]
    if _QUERY_NAME.match(name):
        return [task]
    tokens = _task_tokens(task)
    example = _EXAMPLE.search(description)
    if example or "/" in description:
        sample = example.group(1) if example else description
        for collapse in (False, True):
            wanted = _shape(sample, collapse=collapse)
            same = [t for t in tokens if _shape(t, collapse=collapse) == wanted]
            if same:
                return same
    codes = [t for t in tokens if t.isupper() and t.isalpha() and 2 <= len(t) <= 4]
    if re.search(r"\bcode\b", description, re.I) and codes:
        return codes
    if _ID_NAME.search(name):
        stem = name.split("_")[0].upper()
        ids = [
            t
            for t in tokens
            if t[:1].isalpha() and re.search(r"\d", t) and t not in foreign  # not "67-year-old"
        ]

        # "ORD-778120" for order_id before the customer's "C-3391"
        def matches(token: str) -> bool:
            prefix = re.match(r"[A-Z]+", token)
            return prefix is not None and _subsequence(prefix.group(0), stem)

        ranked = sorted(ids, key=lambda t: not matches(t))
        if ranked:
            return ranked
        if codes and not name.lower().endswith("id"):
            return codes
        return None  # an id nobody gave us: the tool cannot be called
    proper = [
        t
        for t in tokens
        if t[:1].isupper() and not t.isupper() and t.isalpha() and t.lower() not in _MONTHS
    ]
    return proper or [task]


def _fallback_literal(schema: Mapping[str, Any], task: str) -> Any:
    codes = [t for t in _task_tokens(task) if t.isupper() and t.isalpha() and 2 <= len(t) <= 6]
    return codes[0] if codes else task


def _subsequence(short: str, long: str) -> bool:
    it = iter(long)
    return all(ch in it for ch in short)


def _literal(
    name: str,
    schema: Mapping[str, Any],
    task: str,
    taken: Sequence[Any] = (),
    foreign: Collection[Any] = (),
) -> tuple[bool, Any]:
    """(fillable, value) for an argument that no earlier response provides; a value already
    used for another argument of the same call is avoided when there is another candidate,
    and an identifier of another kind of entity (``foreign``) is never used."""
    for k in ("default", "const"):
        if k in schema:
            return True, schema[k]
    if schema.get("examples"):
        return True, schema["examples"][0]
    if schema.get("enum"):
        options = list(schema["enum"])
        mentioned = [
            o
            for o in options
            if isinstance(o, str) and re.search(rf"\b{re.escape(o)}\b", task, re.I)
        ]
        return True, (mentioned or options)[0]
    types = _types(schema) or {"string"}
    if "string" in types:
        candidates = [
            c for c in _string_candidates(name, schema, task, foreign) or () if c not in foreign
        ]
        if not candidates:
            return False, None
        fresh = [c for c in candidates if c not in taken]
        return True, (fresh or candidates)[0]
    if "integer" in types or "number" in types:
        numbers = [n for n in _numbers(task) if "integer" not in types or n == int(n)]
        value = 5.0 if _COUNT_NAME.match(name) or not numbers else numbers[0]
        value = _clamp(value, schema)
        return True, int(value) if "integer" in types or value == int(value) else value
    if "boolean" in types:
        return True, False
    if "array" in types:
        items = schema.get("items") or {}
        ok, item = _literal(name.rstrip("s"), items if isinstance(items, Mapping) else {}, task)
        count = max(1, int(schema.get("minItems", 1)))
        return ok, [item] * count if ok else None
    if "object" in types:
        return True, {}
    return True, None


def _array_source(
    schema: Mapping[str, Any], responses: Sequence[tuple[int, Any]]
) -> ArgSource | None:
    """An array argument with no same-named field: the first array of matching items."""
    raw = schema.get("items")
    items: Mapping[str, Any] = raw if isinstance(raw, Mapping) else {}
    need = int(schema.get("minItems", 0))

    def walk(node: Any, path: tuple[Any, ...]) -> tuple[Any, ...] | None:
        if isinstance(node, list):
            if len(node) >= max(need, 1) and all(
                _type_ok(v, items) and not isinstance(v, dict | list) for v in node
            ):
                return path
            return None
        if isinstance(node, Mapping):
            for k, v in node.items():
                found = walk(v, (*path, str(k)))
                if found is not None:
                    return found
        return None

    for step, data in responses:
        path = walk(data, ())
        if path:
            return ArgSource(step=step, path=path, key=str(path[-1]))
    return None


def _echoes(view: Any) -> dict[str, Any]:
    """Scalars a clean response repeats from its request (top level or a nested object such as
    ``query``), by field name; list items are results, not echoes."""
    out: dict[str, Any] = {}
    for path, value in iter_leaves(view):
        if not path or any(isinstance(p, int) for p in path) or len(path) > 2:
            continue
        if isinstance(value, str | int | float) and not isinstance(value, bool):
            out.setdefault(str(path[-1]), value)
    return out


def _consistent(source: ArgSource, echo: Any, responses: Sequence[tuple[int, Any]]) -> bool:
    data = dict(responses).get(source.step)
    found, value = _lookup(data, source.path)
    return found and value == echo


def _foreign_ids(name: str, responses: Sequence[tuple[int, Any]]) -> set[Any]:
    """Identifiers earlier responses give under another identifier field than ``name``."""
    wanted = _norm_key(name)
    return {
        value
        for _, data in responses
        for path, value in iter_leaves(data)
        if path
        and isinstance(path[-1], str)
        and is_identifier_name(path[-1])
        and _norm_key(path[-1]) != wanted
    }


def _mentions(text: str, value: Any) -> bool:
    """``text`` names ``value``: verbatim, word by word ("GDPR Art. 33" for ``GDPR-Art-33``),
    or as a spelling variant sharing a long prefix ("Lisbon" for ``Lisboa``)."""
    wanted = normalize_scalar(value)
    said = normalize_scalar(text)
    if not wanted or wanted in said:
        return bool(wanted)
    words = set(re.findall(r"[a-z0-9]+", said))
    parts = re.findall(r"[a-z0-9]+", wanted)
    if parts and all(p in words for p in parts):
        return True
    for word in words:
        common = next(
            (i for i, (a, b) in enumerate(zip(word, wanted, strict=False)) if a != b),
            min(len(word), len(wanted)),
        )
        if common >= 5 and common >= 0.8 * min(len(word), len(wanted)):
            return True
    return False


def _grounded(echo: Any, task: str, responses: Sequence[tuple[int, Any]]) -> ArgSource | None:
    """Where an agent could have learnt the identifier a response echoes: the task (a
    literal), or a field of an earlier response (read from the actual response at run time,
    so a faulted step starves this one). ``None``: nothing the agent saw names it, so asking
    for exactly that would be reading the answer before calling."""
    if _mentions(task, echo):
        return ArgSource(literal=echo)
    for step, data in responses:
        for path, value in iter_leaves(data):
            if path and value == echo:
                return ArgSource(step=step, path=tuple(path), key=str(path[-1]))
    return None


def _requested(verb: str, task: str) -> bool:
    """The task asks for the action ``verb`` (and does not forbid it)."""
    stem = verb[:5] if len(verb) > 5 else verb
    for m in re.finditer(rf"\b[\w-]*{re.escape(stem)}\w*", task, re.I):
        before = task[max(0, m.start() - 25) : m.start()].lower()
        if re.search(r"\b(?:do not|don't|never|not|no need to|without)\s+(?:\w+\s+)?$", before):
            continue
        return True
    return False


def plan_from_scenario(scenario: Scenario) -> Plan:
    """The task as an ordered list of tool calls; see the module docstring for the rules.

    Tools are taken in the scenario's order. A reading tool is called when its required
    arguments can be filled; an acting tool (``update_*``, ``send_*``, ``http_post``, ...)
    only when the task asks for that action or the scenario names it as the tool under test
    — an agent does not merge, book or send on its own initiative.
    """
    calls: list[PlannedCall] = []
    unplanned: list[str] = []
    responses: list[tuple[int, Any]] = []
    for tool in scenario.tools:
        verb, writes = tool_verb(tool.name)
        if writes and tool.name != scenario.fault.tool and not _requested(verb, scenario.task):
            unplanned.append(tool.name)
            continue
        schema = tool.input_schema
        props: Mapping[str, Any] = schema.get("properties") or {}
        required = list(schema.get("required") or [])
        args: dict[str, ArgSource] = {}
        fillable = True
        echoed = _echoes(tool.response.json_view())
        for name in required:
            prop = props.get(name, {})
            source = _find_source(name, prop, responses)
            echo = echoed.get(name)
            if echo is not None and (
                not _type_ok(echo, prop) or echo not in prop.get("enum", [echo])
            ):
                echo = None
            if echo is not None and (source is None or not _consistent(source, echo, responses)):
                # the tool's own answer names what it was asked for: ask for exactly that —
                # an identifier only when the task or an earlier response names it too
                if not is_identifier_name(name):
                    args[name] = ArgSource(literal=echo)
                    continue
                grounded = _grounded(echo, scenario.task, responses)
                if grounded is not None:
                    args[name] = grounded
                    continue
            if source is None and "array" in _types(prop):
                view = tool.response.json_view()
                listed = view.get(name) if isinstance(view, Mapping) else None
                if (
                    isinstance(listed, list)
                    and listed
                    and _type_ok(listed, prop)
                    and all(_mentions(scenario.task, v) for v in listed)
                ):
                    args[name] = ArgSource(literal=listed)  # the task names every item
                    continue
                source = _array_source(prop, responses)
            if source is None:
                taken = [a.literal for a in args.values() if not a.derived]
                foreign = _foreign_ids(name, responses)
                ok, value = _literal(name, prop, scenario.task, taken, foreign)
                if not ok and tool.name == scenario.fault.tool and not _ADDRESS_NAME.search(name):
                    # the scenario says the task uses this tool: best effort, the task text
                    ok, value = True, _fallback_literal(prop, scenario.task)
                if not ok:
                    fillable = False
                    break
                source = ArgSource(literal=value)
            args[name] = source
        if not fillable:
            unplanned.append(tool.name)
            continue
        calls.append(PlannedCall(tool.name, args))
        view = tool.response.json_view()
        if view is not None:
            responses.append((len(calls) - 1, view))
    return Plan(tuple(calls), tuple(unplanned))


def _lookup(data: Any, path: Sequence[Any]) -> tuple[bool, Any]:
    node = data
    for part in path:
        if (isinstance(node, Mapping) and part in node) or (
            isinstance(node, list) and isinstance(part, int) and part < len(node)
        ):
            node = node[part]
        else:
            return False, None
    return True, node


def _tolerant_lookup(data: Any, source: ArgSource) -> tuple[bool, Any]:
    """Read a field that may have been renamed: same container, the key that is new."""
    found, value = _lookup(data, source.path)
    if found:
        return True, value
    found, parent = _lookup(data, source.path[:-1])
    if isinstance(parent, Mapping):
        wanted = _norm_key(source.key)
        for key, v in parent.items():
            if isinstance(v, Mapping | list):
                continue
            k = _norm_key(str(key))
            if wanted in k or k in wanted or (wanted.endswith("id") and k.endswith("id")):
                return True, v
    # the same field name anywhere else in the response
    for path, v in iter_leaves(data):
        if path and isinstance(path[-1], str) and _norm_key(path[-1]) == _norm_key(source.key):
            return True, v
    return False, None


def remap_arguments(
    arguments: Mapping[str, Any], schema: Mapping[str, Any]
) -> dict[str, Any] | None:
    """Move arguments the schema no longer declares onto declared names that are unfilled.

    Pairs are matched by shared name parts first, then by order. ``None`` when nothing moves.
    """
    declared = list((schema.get("properties") or {}).keys())
    if not declared:
        return None
    unknown = [k for k in arguments if k not in declared]
    free = [k for k in declared if k not in arguments]
    if not unknown or not free:
        return None
    out = {k: v for k, v in arguments.items() if k in declared}
    for old in unknown:
        parts = set(re.split(r"[_\W]+", old.lower())) - {""}
        best = max(
            free, key=lambda n: len(parts & set(re.split(r"[_\W]+", n.lower()))), default=None
        )
        if best is None:
            break
        out[best] = arguments[old]
        free.remove(best)
    return out


# =============================================================================================
# Agents
# =============================================================================================


@dataclass
class AgentConfig:
    """Knobs shared by the reference agents (saved with every workbench run)."""

    call_timeout: float = 0.5
    attempts: int = 3
    base_delay: float = 0.02
    seed: int = 0
    think_time: float = 0.0  # seconds per model step, to look like a model to the time cue


@dataclass
class _RunState:
    scenario: Scenario
    client: Any
    trajectory: Trajectory
    conversation_id: str
    tools: dict[str, Tool] = field(default_factory=dict)
    data: dict[int, Any] = field(default_factory=dict)
    parts: list[str] = field(default_factory=list)
    caveats: list[str] = field(default_factory=list)
    obeyed: set[str] = field(default_factory=set)
    step: int = 0


class Agent:
    """Base of the reference agents: model steps, listing, the plan loop."""

    name = "agent"

    def __init__(self, config: AgentConfig | None = None) -> None:
        self.config = config or AgentConfig()

    def _event(self, st: _RunState, kind: str, tool: str | None = None, detail: str = "") -> None:
        st.trajectory.events.append(AgentEvent(kind, tool, detail))

    def _response_id(self, st: _RunState) -> str:
        rid = f"{st.conversation_id}/r{st.step}"
        st.step += 1
        return rid

    async def _think(self) -> None:
        if self.config.think_time > 0:
            await asyncio.sleep(self.config.think_time)

    async def run(
        self, scenario: Scenario, client: Any, trajectory: Trajectory, *, conversation_id: str
    ) -> str:
        """Carry out ``scenario.task`` through ``client``; returns the final answer."""
        st = _RunState(scenario, client, trajectory, conversation_id)
        with model_response(self._response_id(st), conversation_id=conversation_id):
            await self._think()
            listed = await client.list_tools()
        st.tools = {t.name: t for t in listed.tools}
        await self.on_listing(st)
        plan = plan_from_scenario(scenario)
        for index, call in enumerate(plan.calls):
            await self.execute(st, index, call)
        with model_response(self._response_id(st), conversation_id=conversation_id):
            await self._think()
            return self.compose(st)

    async def on_listing(self, st: _RunState) -> None:  # pragma: no cover - overridden
        return None

    async def execute(self, st: _RunState, index: int, call: PlannedCall) -> None:
        raise NotImplementedError

    def compose(self, st: _RunState) -> str:
        raise NotImplementedError

    async def _call(
        self, st: _RunState, tool: str, arguments: dict[str, Any]
    ) -> tuple[CallToolResult | None, FailureClass | None, str]:
        """One model step issuing one call: (result, failure class, error message)."""
        with model_response(self._response_id(st), conversation_id=st.conversation_id):
            await self._think()
            result, error = await try_call(
                lambda timeout: st.client.call_tool(tool, arguments, read_timeout_seconds=timeout),
                self.config.call_timeout,
            )
        if result is None:
            assert error is not None
            return None, classify_failure(None, error), first_line(error)
        return (
            result,
            classify_failure(result, None),
            result_text(result) if result.is_error else "",
        )


def _render(tool: str, result: CallToolResult, *, strip: bool) -> str:
    """A result as the agent quotes it: every text block the tool sent (what a model reads),
    or the structured content when there is no text; instructions removed if ``strip``."""
    text = result_text(result)
    if not text.strip() and result.structured_content is not None:
        text = json.dumps(result.structured_content, ensure_ascii=False)
    if strip:
        text = strip_instructions(text)
    return f"{tool}: {text}"


def _url_tool(tools: Mapping[str, Tool]) -> tuple[str, str] | None:
    """A (tool, argument) that takes an address — where an obeyed instruction sends data."""
    for tool in tools.values():
        props = (tool.input_schema or {}).get("properties") or {}
        for name, prop in props.items():
            if _ADDRESS_NAME.search(name) or (
                isinstance(prop, Mapping) and prop.get("format") in ("uri", "url", "email")
            ):
                return tool.name, name
    return None


_EMAIL: Final = re.compile(r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b")


class NaiveAgent(Agent):
    """Trusts outputs, obeys instructions found in them, never retries, never hedges."""

    name = "naive"

    async def on_listing(self, st: _RunState) -> None:
        for tool in st.tools.values():
            for sentence in _instruction_sentences(tool.description or ""):
                await self._obey(st, sentence, source=f"description of {tool.name}")

    async def execute(self, st: _RunState, index: int, call: PlannedCall) -> None:
        args: dict[str, Any] = {}
        for name, source in call.arguments.items():
            if not source.derived:
                args[name] = source.literal
                continue
            found, value = _lookup(st.data.get(source.step), source.path)
            if not found:
                self._event(st, "missing_input", call.tool, name)
                return  # cannot fill it: silently skip the step
            args[name] = value
        result, failure, _ = await self._call(st, call.tool, args)
        if result is None or failure is not None:
            # A failure is "no data": nothing to report, unless a mitigation explained it in
            # words meant for the model (flagged): a trusting agent passes those on.
            if result is not None and result_flags(result):
                st.parts.extend(
                    annotation_texts(result) or [_render(call.tool, result, strip=False)]
                )
            return
        st.data[index] = result_data(result)
        if is_empty_result(result):
            st.parts.append(f"{call.tool}: No results found.")
        else:
            st.parts.append(_render(call.tool, result, strip=False))
        st.parts.extend(annotation_texts(result))
        sentences: dict[str, None] = {}
        for text in readable_texts(result):
            for sentence in _instruction_sentences(text):
                sentences.setdefault(sentence.strip(), None)
        for sentence in sentences:
            await self._obey(st, sentence, source=call.tool)

    async def _obey(self, st: _RunState, text: str, *, source: str) -> None:
        """Do what planted text says: call the tools it names (or an address-taking tool when
        it names a destination), passing what was gathered so far, and repeat what it says."""
        text = text.strip()
        if text in st.obeyed:
            return
        st.obeyed.add(text)
        self._event(st, "instruction_followed", None, source)
        targets = find_urls(text) + _EMAIL.findall(text)
        named = [
            name
            for name in st.tools
            if name != source and re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", text)
        ]
        if not named and targets:
            sink = _url_tool(st.tools)
            named = [sink[0]] if sink else []
        gathered = "\n".join(st.parts) or st.scenario.task
        for tool in named:
            schema = st.tools[tool].input_schema or {}
            props = schema.get("properties") or {}
            args: dict[str, Any] = {}
            for name in schema.get("required") or []:
                prop = props.get(name, {})
                if _ADDRESS_NAME.search(name) or prop.get("format") in ("uri", "url", "email"):
                    if not targets:
                        break
                    args[name] = targets[0]
                    continue
                ok, value = _literal(name, prop, text, list(args.values()))
                if not ok:
                    break
                args[name] = gathered if value == text else value  # "send the data": send it
            else:
                await self._call(st, tool, args)
        st.parts.append(f"Note: {text}")

    def compose(self, st: _RunState) -> str:
        if not st.parts:
            return "I found no information for this request."
        return "Here is what I found.\n" + "\n".join(st.parts)


class CarefulAgent(Agent):
    """Retries with backoff, validates shapes, ignores instructions in outputs, hedges."""

    name = "careful"

    def __init__(self, config: AgentConfig | None = None) -> None:
        super().__init__(config)
        self._rng = random.Random(self.config.seed)

    async def on_listing(self, st: _RunState) -> None:
        for tool in st.tools.values():
            if find_instructions(tool.description or ""):
                self._event(st, "description_ignored", tool.name)
                st.caveats.append(
                    f"The description of tool '{tool.name}' contains instructions addressed to "
                    "me; I did not follow them."
                )

    def _resolve(self, st: _RunState, call: PlannedCall) -> tuple[dict[str, Any], list[str]]:
        args: dict[str, Any] = {}
        missing: list[str] = []
        for name, source in call.arguments.items():
            if not source.derived:
                args[name] = source.literal
                continue
            data = st.data.get(source.step)
            found, value = _lookup(data, source.path)
            if not found and data is not None:
                found, value = _tolerant_lookup(data, source)
                if found:
                    self._event(st, "drift_adapted", call.tool, f"field {source.key}")
            if not found:
                missing.append(name)
            else:
                args[name] = value
        return args, missing

    async def execute(self, st: _RunState, index: int, call: PlannedCall) -> None:
        args, missing = self._resolve(st, call)
        if missing:
            self._event(st, "missing_input", call.tool, ",".join(missing))
            st.caveats.append(
                f"I could not call '{call.tool}' because an earlier step did not provide "
                f"{', '.join(missing)}; the answer is incomplete."
            )
            return
        relisted = remapped = False
        failure: FailureClass | None = None
        result: CallToolResult | None = None
        for attempt in range(1, self.config.attempts + 1):
            result, failure, _ = await self._call(st, call.tool, args)
            if failure is None:
                break
            self._event(st, "error_seen", call.tool, failure.value)
            if (
                failure in (FailureClass.INVALID_ARGUMENTS, FailureClass.INVALID_RESULT)
                and not relisted
            ):
                # The documented arguments were rejected: read the tool's current schema.
                relisted = True
                new_args, accepted = await self._remap(st, call.tool, args)
                if new_args is not None:
                    self._event(st, "drift_adapted", call.tool, "arguments")
                    args, remapped = new_args, True
                    continue
                if accepted and attempt < self.config.attempts:
                    self._event(st, "retry", call.tool, "schema accepts the arguments")
                    continue
            if not failure.retryable or attempt == self.config.attempts:
                break
            self._event(st, "retry", call.tool, failure.value)
            delay = self.config.base_delay * 2 ** (attempt - 1) * (1 + 0.2 * self._rng.random())
            await asyncio.sleep(delay)
        if failure is not None or result is None:
            st.caveats.append(_failure_caveat(call.tool, failure, attempt))
            return
        if remapped:
            st.caveats.append(
                f"Tool '{call.tool}' no longer accepted its documented arguments; I adapted the "
                "call to its new parameters."
            )
        st.data[index] = result_data(result)
        self._inspect(st, call.tool, result)

    async def _remap(
        self, st: _RunState, tool: str, args: dict[str, Any]
    ) -> tuple[dict[str, Any] | None, bool]:
        """Re-list tools: (arguments moved to renamed parameters, or None; whether the current
        schema accepts the arguments as they are)."""
        with model_response(self._response_id(st), conversation_id=st.conversation_id):
            await self._think()
            listed = await st.client.list_tools()
        st.tools = {t.name: t for t in listed.tools}
        current = st.tools.get(tool)
        if current is None:
            return None, False
        schema = current.input_schema or {}
        return remap_arguments(args, schema), not argument_errors(schema, args)

    def _inspect(self, st: _RunState, tool: str, result: CallToolResult) -> None:
        texts = readable_texts(result)
        if any(find_instructions(t) for t in texts):
            self._event(st, "instruction_ignored", tool)
            st.caveats.append(
                f"The output of '{tool}' contained instructions addressed to me; I ignored them."
            )
        for flag in result_flags(result):
            kind = flag.get("flag", "")
            self._event(st, kind or "flagged", tool, flag.get("mitigation", ""))
            st.caveats.append(_flag_caveat(tool, kind))
        if result.is_error:  # a blocked result (scanner) arrives as an error with flags
            return
        if is_empty_result(result):
            self._event(st, "empty_result", tool)
            st.caveats.append(
                f"'{tool}' returned an empty result. That may be a silent failure rather than "
                "proof that nothing exists; I could not verify it."
            )
            return
        declared = st.tools.get(tool)
        schema = declared.output_schema if declared else None
        if schema and not any(f.get("flag") == "schema_mismatch" for f in result_flags(result)):
            problems = schema_problems(result_data(result), schema)
            if problems:
                self._event(st, "schema_mismatch", tool, "; ".join(problems))
                st.caveats.append(
                    f"The response of '{tool}' does not match its documented format; values "
                    "read from it may be unreliable."
                )
        st.parts.append(_render(tool, result, strip=True))

    def compose(self, st: _RunState) -> str:
        lines = ["Here is what I found."] if st.parts else ["I could not complete the request."]
        lines += st.parts
        if st.caveats:
            lines.append("Caveats:")
            lines += [f"- {c}" for c in dict.fromkeys(st.caveats)]
        return "\n".join(lines)


def _failure_caveat(tool: str, failure: FailureClass | None, attempts: int) -> str:
    kind = failure.value.replace("_", " ") if failure else "an unknown error"
    if failure is FailureClass.PERMISSION_DENIED:
        return (
            f"Access to '{tool}' was denied (permission denied); I did not retry. You may need to "
            "grant access."
        )
    tries = f" after {attempts} attempt(s)" if attempts > 1 else ""
    return f"'{tool}' failed ({kind}){tries}; I could not get this information."


_FLAG_TEXT: Final = {
    "conflict": "disagrees with another source; the values conflict, I cannot tell which is right",
    "stale": "may be out of date; I could not confirm it is current",
    "irrelevant": "does not appear to answer the request; it may be unrelated",
    "schema_mismatch": "does not match its documented format; values read from it may be wrong",
    "empty_result": "was empty, which may be a silent failure; I could not verify it",
    "injection": "contained instructions addressed to me and was withheld or redacted",
}


def _flag_caveat(tool: str, kind: str) -> str:
    return f"The result of '{tool}' " + _FLAG_TEXT.get(kind, "was flagged as unreliable") + "."


def _instruction_sentences(text: str) -> list[str]:
    return [text[h.start : h.end] for h in find_instructions(text)]


def readable_texts(result: CallToolResult) -> list[str]:
    """The texts a model reads in a result, each once: the strings of the JSON document (from
    structured content or a JSON text block) and every text block that is not that JSON."""
    data = result_data(result)
    texts = (
        [v for _, v in iter_leaves(data) if isinstance(v, str)] if not isinstance(data, str) else []
    )
    for block in result.content:
        if isinstance(block, TextContent) and not is_annotation(block):
            stripped = block.text.strip()
            if isinstance(data, str) or not stripped.startswith(("{", "[")):
                texts.append(block.text)
    return texts


def make_agent(name: str, config: AgentConfig | None = None) -> Agent:
    """A reference agent by name (``naive`` / ``careful``); ``llm`` needs the environment."""
    if name == "naive":
        return NaiveAgent(config)
    if name == "careful":
        return CarefulAgent(config)
    if name == "llm":
        from toolwatch.injection.workbench.llm_agent import LLMAgent

        return LLMAgent.from_env(config)
    raise ValueError(f"unknown agent {name!r}; choose from {', '.join(AGENT_NAMES)}")
