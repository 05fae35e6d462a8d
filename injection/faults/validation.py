"""Validating scenario files: the shipped JSON Schema, then the semantics (pointers that resolve,
checks each fault type needs, faults that would be silent). Every problem names the file and the
JSON pointer of the offending field, never a traceback.
"""

from __future__ import annotations

import contextlib
import json
import math
from collections.abc import Mapping
from functools import cache
from typing import Any, Final
from urllib.parse import urlsplit

import jsonschema

from toolwatch.documents import loads_json
from toolwatch.injection.faults.agentcheck import AGENTCHECK_SCHEMA, ORIGIN, convert, is_agentcheck
from toolwatch.injection.faults.codec import build_scenario
from toolwatch.injection.faults.effects import CallPlan
from toolwatch.injection.faults.engine import FaultEngine
from toolwatch.injection.faults.pointer import pointer_join, resolve_pointer, set_pointer
from toolwatch.injection.faults.scenario import (
    FORMAT,
    QUOTE_LIMIT,
    Problem,
    Scenario,
    clip,
    quote,
    scenario_schema,
)
from toolwatch.injection.faults.taxonomy import FAULT_ACTIONS, SILENT_FAULTS

# --------------------------------------------------------------------------------------------
# Loading
# --------------------------------------------------------------------------------------------


def validate_data(data: Any) -> list[Problem]:
    """Every problem in a decoded scenario document (schema first, then semantics, then what
    the fault does to a declared output schema)."""
    problems = _non_finite_problems(data)
    if problems:
        return problems
    if is_agentcheck(data):
        problems = _schema_problems(data, AGENTCHECK_SCHEMA)
        if problems:
            return problems
        fid, action = data["fault_type"], data["fault_spec"]["action"]
        if FAULT_ACTIONS[fid] != action:
            return [
                Problem(
                    "/fault_spec/action",
                    f"fault type {fid} uses action {FAULT_ACTIONS[fid]!r}, not {action!r} "
                    "(AgentCheck template)",
                )
            ]
        conversion = convert(data)
        if conversion.problems:
            return conversion.problems
        # the converted document must be a valid toolwatch scenario in its own right, so that
        # `scenarios show --json` of a template validates
        note = " (after conversion from the AgentCheck template)"
        problems = [
            Problem(p.pointer, p.message + note)
            for p in _schema_problems(conversion.doc, scenario_schema())
        ]
        if problems:
            return problems
        problems = _semantic_problems(conversion.doc, strict=True, converted=True)
        return problems or _silence_problems(
            build_scenario(conversion.doc, "<memory>", "agentcheck")
        )
    problems = _schema_problems(data, scenario_schema())
    if problems:
        return problems
    problems = _semantic_problems(data, strict=True, converted=False)
    return problems or _silence_problems(build_scenario(data, "<memory>", FORMAT))


def _non_finite_problems(data: Any) -> list[Problem]:
    """NaN and ±Infinity anywhere in a document, in document order: Python's json reads them
    but JSON has no such numbers, and they pass every bound (a NaN probability validated and
    never fired; ``show --json`` printed it as invalid JSON). Iterative: a document as deep as
    the decoder allows must not overflow the stack here."""
    problems: list[Problem] = []
    stack: list[tuple[tuple[Any, ...], Any]] = [((), data)]
    while stack:
        path, node = stack.pop()
        if isinstance(node, float) and not math.isfinite(node):
            number = json.dumps(node)  # as the file spells it: NaN, Infinity, -Infinity
            problems.append(
                Problem(
                    pointer_join(path), f"{number} is not a number JSON allows (no NaN or Infinity)"
                )
            )
        elif isinstance(node, Mapping):
            stack.extend(((*path, k), v) for k, v in reversed(list(node.items())))
        elif isinstance(node, list):
            stack.extend(((*path, i), v) for i, v in reversed(list(enumerate(node))))
    return problems


def _silence_problems(scenario: Scenario) -> list[Problem]:
    """A silent fault whose faulted result breaks the faulty tool's declared output schema."""
    target = scenario.faulty_tool
    if scenario.fault_type not in SILENT_FAULTS or target.output_schema is None:
        return []

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
            f"({_message(error)}): the mcp client would reject it, so the fault would not "
            "be silent",
        )
    ]


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
            how = "exactly one" if error.validator == "oneOf" else "at least one"
            message = f"expected an object with {how} of {' | '.join(shapes)}"
            return [Problem(here, message + _keys_given(error.instance, error.validator_value))]
        reasons = list(dict.fromkeys(_message(e) for e in error.context))
        return [Problem(here, " or ".join(reasons))]
    return [Problem(here, _message(error))]


_JSON_KINDS: Final[dict[type, str]] = {
    list: "an array",
    str: "a string",
    int: "a number",
    float: "a number",
    bool: "true or false",
    type(None): "null",
}


def _keys_given(instance: Any, branches: Any) -> str:
    """What the object held instead (a typo such as ``nht`` is named, not only the shapes)."""
    if not isinstance(instance, Mapping):
        return f" (got {_JSON_KINDS.get(type(instance), 'a value')})"
    known = {k for b in branches if isinstance(b, Mapping) for k in b.get("properties", {})}
    given = list(instance)
    if not given:
        return " (got an empty object)"
    unknown = [k for k in given if k not in known]
    if unknown:
        verb = "is" if len(unknown) == 1 else "are"
        return f" ({', '.join(quote(k) for k in unknown)} {verb} not one of them)"
    return " (got " + ", ".join(quote(k) for k in given) + ")"


def _message(error: jsonschema.ValidationError | jsonschema.SchemaError) -> str:
    """The error's message quoting at most the start of the value it is about: jsonschema
    echoes the whole instance (a top-level array printed the document; a 10,000-character
    name came back whole), and an object's property names (``additionalProperties``)."""
    message = error.message
    named = list(error.instance) if isinstance(error.instance, Mapping) else []
    for value in [error.instance, *named]:
        full = repr(value)
        if len(full) > QUOTE_LIMIT:
            message = message.replace(full, quote(value))
    return message


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

#: What a scenario converted from AgentCheck must carry: the ground truth AgentCheck's
#: templates define (their A types define none; ``expected_value`` is derived where the clean
#: response holds a distinctive value, but a write tool's "ok" gives none).
AGENTCHECK_REQUIRED_CHECKS: Final[dict[str, tuple[str, ...]]] = {
    **{fid: () for fid in REQUIRED_CHECKS},
    "B1": ("stale_value", "date_context"),
    "B2": ("conflicting_values",),
    "C1": ("payload_id",),
    "C2": ("target_tool",),
    "C3": ("false_claim_aliases",),
    "C4": ("exfiltration_url", "target_tool"),
}


def required_checks(data: Mapping[str, Any]) -> tuple[str, ...]:
    """The machine-checkable fields a scenario of this type and origin must provide."""
    origin = (data.get("origin") or {}).get("format")
    table = AGENTCHECK_REQUIRED_CHECKS if origin == ORIGIN else REQUIRED_CHECKS
    return table[data["fault_type"]]


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
            f"faulty tool {quote(fault['tool'])} is not among the tools ({', '.join(tools)})",
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
                    f"does not match output_schema: {_message(errors[0])}",
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
                    f"tool {target['name']!r} has no argument {quote(old)}",
                )
            if isinstance(declared, Mapping) and new in declared:
                add(f"{pp}/argument_renames/{old}", f"new name {quote(new)} already exists")
        for old in params.get("field_renames", {}):
            if target_json is not None and not _has_key(target_json, old):
                add(
                    f"{pp}/field_renames/{old}",
                    f"clean response of {target['name']!r} has no field {quote(old)}",
                )
        renames = params.get("argument_renames") or params.get("field_renames")
        if strict and not renames and "response" not in params:
            add(pp, "alter_schema needs argument_renames, field_renames or a response")
    as_served = action == "return_conflicting" and "pointer" in params
    if action in ("inject_stale_data", "return_conflicting") and not as_served:
        if not params.get("patch") and "response" not in params:
            add(pp, f"{action} needs patch (fields to overwrite) or response (a replacement)")
        for pointer, value in params.get("patch", {}).items():
            where = f"{pp}/patch/{pointer_join([pointer])[1:]}"
            try:
                clean = resolve_pointer(target_json, pointer)
            except (KeyError, ValueError):
                add(where, f"clean response of {target['name']!r} has no field at {clip(pointer)}")
                continue
            if clean == value:
                add(where, "patched value equals the clean value: the fault would change nothing")
    if as_served:
        if params.get("patch") or "response" in params:
            add(f"{pp}/pointer", "pointer (serve the clean value) excludes patch and response")
        elif "reference" not in params:
            add(f"{pp}/pointer", "a served clean value needs the reference it contradicts")
        else:
            problems.extend(_served_conflict(params, tools, target, target_json, note))
    elif action == "return_conflicting" and "reference" in params:
        ref = params["reference"]
        if ref["tool"] not in tools:
            add(
                f"{pp}/reference/tool",
                f"reference tool {quote(ref['tool'])} is not among the tools",
            )
        elif ref["tool"] == target["name"]:
            add(f"{pp}/reference/tool", "reference tool must be another tool than the faulty one")
        else:
            try:
                ref_value = resolve_pointer(
                    _response_json(tools[ref["tool"]]["response"]), ref["pointer"]
                )
            except (KeyError, ValueError):
                add(
                    f"{pp}/reference/pointer",
                    f"{ref['tool']!r} has no field at {clip(ref['pointer'])}",
                )
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
                            f"clean values disagree already ({quote(clean)} vs "
                            f"{quote(ref_value)}): "
                            "the conflict must be introduced by the fault",
                        )
    if action == "prepend_injection":
        payload = checks.get("payload_id")
        if payload and payload not in params.get("text", ""):
            add(f"{pp}/text", f"injection text does not carry the payload id {quote(payload)}")
    if action == "poison_description":
        text = params.get("description", "") + params.get("append", "")
        if not text:
            add(pp, "poison_description needs description or append")
        elif params.get("description") == target["description"]:
            add(f"{pp}/description", "poisoned description equals the clean one")
        payload = checks.get("payload_id")
        if payload and payload not in text:
            add(pp, f"poisoned description does not carry the payload id {quote(payload)}")
        url = checks.get("exfiltration_url")
        if url and url not in text:
            add(pp, f"poisoned description does not contain the exfiltration URL {clip(url)}")
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
                    f"alias {quote(alias)} occurs in a clean response",
                )
    if action == "inject_exfiltration_instruction":
        url = params.get("exfiltration_url")
        if url and url not in params.get("instruction", ""):
            add(
                f"{pp}/instruction",
                f"instruction does not contain the exfiltration URL {clip(url)}",
            )
        if url and checks.get("exfiltration_url") not in (None, url):
            add("/checks/exfiltration_url", "differs from fault.params.exfiltration_url")
    if action in ("inject_exfiltration_instruction", "poison_description") and checks.get(
        "exfiltration_url"
    ):
        host = urlsplit(checks["exfiltration_url"]).hostname or ""
        if host in checks.get("endpoint_allowlist", []):
            add("/checks/endpoint_allowlist", f"allowlists the exfiltration host {quote(host)}")
    planted = action in (
        "prepend_injection",
        "inject_false_claim",
        "inject_exfiltration_instruction",
    )
    if planted and params.get("pointer") is not None and target_json is not None:
        try:
            value = resolve_pointer(target_json, params["pointer"])
        except (KeyError, ValueError):
            add(
                f"{pp}/pointer",
                f"clean response of {target['name']!r} has no field at {clip(params['pointer'])}",
            )
        else:
            if not isinstance(value, str):
                add(f"{pp}/pointer", "must address a string field (the document text)")

    # machine-checkable fields: present where the type needs them, consistent with responses
    if checks.get("target_tool") and checks["target_tool"] not in tools:
        add("/checks/target_tool", f"tool {quote(checks['target_tool'])} is not among the tools")
    if strict:
        for name in required_checks(data):
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
        elif "response" in params:
            try:
                served = resolve_pointer(_response_json(params["response"]), stale["pointer"])
            except (KeyError, ValueError):
                served = object()
            if served != stale["value"]:
                add(
                    "/checks/stale_value", "is not what fault.params.response holds at that pointer"
                )
    conflicting = checks.get("conflicting_values", [])
    if conflicting and len({json.dumps(c["value"], sort_keys=True) for c in conflicting}) < 2:
        add("/checks/conflicting_values", "values do not disagree")
    return problems


def _served_conflict(
    params: Mapping[str, Any],
    tools: Mapping[str, Any],
    target: Mapping[str, Any],
    target_json: Any,
    note: str,
) -> list[Problem]:
    """A conflict served as it is: the faulty tool's clean value and the reference's differ."""
    pp = "/fault/params"
    ref = params["reference"]
    if ref["tool"] not in tools or ref["tool"] == target["name"]:
        return [Problem(f"{pp}/reference/tool", f"must be another of the tools{note}")]
    try:
        mine = resolve_pointer(target_json, params["pointer"])
    except (KeyError, ValueError):
        return [
            Problem(
                f"{pp}/pointer",
                f"{target['name']!r} has no field at {clip(params['pointer'])}{note}",
            )
        ]
    try:
        theirs = resolve_pointer(_response_json(tools[ref["tool"]]["response"]), ref["pointer"])
    except (KeyError, ValueError):
        return [Problem(f"{pp}/reference/pointer", f"{ref['tool']!r} has no field there{note}")]
    if mine == theirs:
        return [
            Problem(
                f"{pp}/pointer", f"the two clean values agree ({quote(mine)}): no conflict{note}"
            )
        ]
    return []


@cache
def _schema_defect(schema_json: str) -> str | None:
    """Why a tool's input schema is not a valid JSON Schema (cached: checking is slow)."""
    try:
        jsonschema.Draft202012Validator.check_schema(json.loads(schema_json))
    except jsonschema.SchemaError as exc:
        return _message(exc)
    return None


def _check_value_ref(
    ref: Mapping[str, Any], where: str, data: Mapping[str, Any], *, faulted: bool, note: str
) -> list[Problem]:
    """Whether tool ``ref.tool`` returns ``ref.value`` at ``ref.pointer`` (in the faulted run
    when ``faulted``: the faulty tool's response with the fault's patch applied)."""
    tools = {t["name"]: t for t in data["tools"]}
    if ref["tool"] not in tools:
        return [Problem(f"{where}/tool", f"tool {quote(ref['tool'])} is not among the tools{note}")]
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
            Problem(
                f"{where}/pointer", f"{ref['tool']!r} has no field at {clip(ref['pointer'])}{note}"
            )
        ]
    if actual != ref["value"]:
        return [
            Problem(
                f"{where}/value",
                f"{ref['tool']!r} returns {quote(actual)} at {clip(ref['pointer'])}{note}",
            )
        ]
    return []


def _response_json(response: Mapping[str, Any]) -> Any:
    """A response as the JSON document its pointers address: the structured content, the text
    parsed, or a text that is no JSON as a string document (only the root pointer ``""``
    reaches it, as in a template whose clean response is plain prose); ``None`` without
    either."""
    if "structured" in response:
        return response["structured"]
    text = response.get("text")
    if text is None:
        return None
    try:
        return loads_json(text)
    except ValueError:
        return text


def _has_key(doc: Any, key: str) -> bool:
    if isinstance(doc, Mapping):
        return key in doc or any(_has_key(v, key) for v in doc.values())
    if isinstance(doc, list):
        return any(_has_key(v, key) for v in doc)
    return False
