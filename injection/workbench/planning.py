"""How a reference agent plans a task from a scenario: which tools to call in which order, and
plausible arguments drawn from each tool's schema, the task text and earlier results.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from toolwatch.injection.faults.pointer import lookup
from toolwatch.injection.faults.scenario import Scenario
from toolwatch.injection.mitigations.acts import tool_verb
from toolwatch.injection.mitigations.results import (
    iter_leaves,
)
from toolwatch.injection.mitigations.urls import (
    find_urls,
)
from toolwatch.injection.mitigations.values import (
    is_identifier_name,
    normalize_scalar,
)
from toolwatch.injection.workbench.task_asks import names_tool, requested

ADDRESS_NAME: Final = re.compile(
    r"(^|_)(url|uri|href|link|endpoint|webhook|callback|address|recipient|email|to)$", re.I
)
_ID_NAME: Final = re.compile(
    r"(^|_)(id|ids|key|code|number|no|ref|sku|slug|symbol|ticker|flight)$", re.I
)
_COUNT_NAME: Final = re.compile(
    r"^(limit|top_?k|count|max_\w+|\w*_count|size|n|page_?size|num_\w+|days|nights)$", re.I
)
_QUERY_NAME: Final = re.compile(r"^(query|q|text|search|keywords?|topic|question|prompt)$", re.I)
_PATH_NAME: Final = re.compile(r"(^|_)(path|file|filename|filepath|dir|directory|folder)$", re.I)
#: a path in the task: absolute, home- or drive-rooted, or a file name with an extension
_PATH: Final = re.compile(
    r"(?<![\w/.~-])(?:~?/|[A-Za-z]:\\)[^\s'\"`,;()]+|(?<![\w/.-])[\w-]{2,}\.[A-Za-z][A-Za-z0-9]{0,4}\b"
)
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


#: What a parameter's own description says of its number ("default 3", "max 10", "at most
#: 3", "up to 50", "at least 1"), for schemas that do not say it in keywords (AgentCheck's,
#: read from prose, keep each parameter's words as its ``description``).
_DESCRIBED: Final = {
    "default": re.compile(r"\bdefaults?(?:\s+(?:is|of|to))?\s*[:=]?\s*(\d+)\b", re.I),
    "maximum": re.compile(
        r"\b(?:max(?:imum)?|at most|up to|no more than|not more than)\s*(?:of|is)?\s*[:=]?\s*"
        r"(\d+)\b",
        re.I,
    ),
    "minimum": re.compile(r"\b(?:min(?:imum)?|at least)\s*(?:of|is)?\s*[:=]?\s*(\d+)\b", re.I),
}


def _described(schema: Mapping[str, Any], word: str) -> int | None:
    found = _DESCRIBED[word].search(str(schema.get("description") or ""))
    return int(found.group(1)) if found else None


def _clamp(value: float, schema: Mapping[str, Any]) -> float:
    """``value`` within the schema's bounds, else those its description states."""
    lo = schema.get("minimum", schema.get("exclusiveMinimum", _described(schema, "minimum")))
    hi = schema.get("maximum", schema.get("exclusiveMaximum", _described(schema, "maximum")))
    if isinstance(lo, int | float) and value < lo:
        value = lo + 1 if "minimum" not in schema and "exclusiveMinimum" in schema else lo
    if isinstance(hi, int | float) and value > hi:
        value = hi - 1 if "maximum" not in schema and "exclusiveMaximum" in schema else hi
    return value


def _string_candidates(
    name: str, schema: Mapping[str, Any], task: str, foreign: Collection[Any] = ()
) -> list[str] | None:
    """Values for a string argument, best first; ``None`` when the task cannot supply one.
    ``foreign`` are identifiers already known to name another kind of entity (a customer id
    is not a ticket id)."""
    description = str(schema.get("description") or "")
    if ADDRESS_NAME.search(name) or schema.get("format") in ("uri", "url", "email"):
        return find_urls(task) or None
    if schema.get("format") == "date" or "YYYY-MM-DD" in description:
        return [_iso_date(task) or "2026-01-01"]
    if "YYYY-MM" in description:
        return [_iso_date(task, month_only=True) or "2026-01"]
    if _QUERY_NAME.match(name):
        return [task]
    if _PATH_NAME.search(name):
        paths = [m.group(0).rstrip(".") for m in _PATH.finditer(task)]
        if paths:  # "save ... into the file /drafts/status.txt": that path, not the sentence
            return paths
    tokens = _task_tokens(task)
    example = _EXAMPLE.search(description)
    sample = example.group(1) if example else description if "/" in description else ""
    # a lowercase word's shape ('en', 'us') is every short word's ('in', 'to'): no shape
    lowercase = example is not None and re.fullmatch(r"[a-z]+", sample) is not None
    if sample and not lowercase:
        for collapse in (False, True):
            wanted = _shape(sample, collapse=collapse)
            same = [t for t in tokens if _shape(t, collapse=collapse) == wanted]
            if same:
                return same
    codes = [t for t in tokens if t.isupper() and t.isalpha() and 2 <= len(t) <= 4]
    if re.search(r"\bcode\b", description, re.I) and codes:
        return codes
    if lowercase and re.search(r"\bcode\b", description, re.I):
        # a code the task names in words ('in English', 'the United States'), which are no
        # code: the description's own example ('en', 'us'), not a capitalised word of the task
        return [sample]
    named = [v for v in _named_value(name, task) if v not in foreign]
    if named:
        return named
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


#: A value right after the word that names it ("branch release/2.4", "flight LX 1612"): one
#: token with a digit or a slash, or letters followed by a number.
_NAMED_VALUE: Final = (
    r"\s+(?:(?:is|=|:)\s+)?['\"`]?"
    r"([A-Za-z0-9][\w.#:-]*[/\d][\w/.#:-]*|[A-Z]{1,5}\s+\d[\w.-]*)(?<![.,;:])"
)


def _named_value(name: str, task: str) -> list[str]:
    """Values the task gives right after a word the argument is named by ("repository
    acme/widgets" for ``repo``, "train ICE 578" for ``train_no``), instead of guessing a
    capitalised word or sending the whole sentence."""
    words = [w for w in re.split(r"[_\W]+", name.lower()) if len(w) >= 3]
    out: list[str] = []
    for word in words[:1]:
        for m in re.finditer(rf"\b{re.escape(word)}\w*{_NAMED_VALUE}", task, re.I):
            out.append(m.group(1))
    return out


def _fallback_literal(schema: Mapping[str, Any], task: str) -> Any:
    codes = [t for t in _task_tokens(task) if t.isupper() and t.isalpha() and 2 <= len(t) <= 6]
    return codes[0] if codes else task


def _subsequence(short: str, long: str) -> bool:
    it = iter(long)
    return all(ch in it for ch in short)


def literal_value(
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
        count = _described(schema, "default") or 5.0  # a count the task does not give
        value = count if _COUNT_NAME.match(name) or not numbers else numbers[0]
        value = _clamp(value, schema)
        return True, int(value) if "integer" in types or value == int(value) else value
    if "boolean" in types:
        return True, False
    if "array" in types:
        items = schema.get("items") or {}
        ok, item = literal_value(
            name.rstrip("s"), items if isinstance(items, Mapping) else {}, task
        )
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
    found, value = lookup(data, source.path)
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
        verb, writes = tool_verb(tool.name, tool.description, tool.annotations)
        if writes and tool.name != scenario.fault.tool and not requested(verb, scenario.task):
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
                ok, value = literal_value(name, prop, scenario.task, taken, foreign)
                if (
                    not ok
                    and tool.name == scenario.fault.tool
                    and not ADDRESS_NAME.search(name)
                    and names_tool(tool.name, verb, scenario.task)
                ):
                    # the task asks for what this tool is about: best effort, the task text
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


def tolerant_lookup(data: Any, source: ArgSource) -> tuple[bool, Any]:
    """Read a field that may have been renamed: same container, the key that is new."""
    found, value = lookup(data, source.path)
    if found:
        return True, value
    found, parent = lookup(data, source.path[:-1])
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
