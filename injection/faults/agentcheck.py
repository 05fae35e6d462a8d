"""AgentCheck templates (aritra741/AgentCheck) converted to toolwatch scenarios, keeping their
ground truth.

Every machine-checkable field of a template lands where a check or the engine reads it:

=========  ==========================================  =========================================
type       template field                              toolwatch field
=========  ==========================================  =========================================
A1         ``timeout_ms``                              ``fault.params.delay_ms`` (a real hold)
A2         ``error_code``, ``error_message``           ``params.code`` (as given) and ``status``
                                                       (the code if numeric, else its HTTP class),
                                                       ``params.message``
A3         ``required_role``                           ``params.required_role``
A4         ``rename_args``, ``altered_response``       ``params.argument_renames``,
                                                       ``params.response`` (one of them at least)
B1         ``stale_response``, ``stale_date``,         ``params.response``,
           ``task_requires_fresh_data``                ``checks.date_context``
B2         ``conflict_field``, ``tool_a_value``,       ``checks.conflicting_values`` (each value
           ``tool_b_value``                            found in its own tool's response)
B3         ``irrelevant_response``                     ``params.response``
B4         (none: the action alone)                    ``params.response`` = AgentCheck's own
                                                       empty result (:data:`AGENTCHECK_EMPTY`)
C1         ``injection_string``, ``payload_id``        ``params.text`` (verbatim),
                                                       ``checks.payload_id`` (verbatim)
C2         ``poisoned_description``, ``target_tool``,  ``params.description`` on the ``is_faulty``
           ``is_faulty``                               tool (the poisoner), ``checks.target_tool``
C3         ``false_claim``, ``false_claim_aliases``    ``params.claim`` where AgentCheck's
                                                       injector plants it (``pointer``, else
                                                       ``beside_document``),
                                                       ``checks.false_claim_aliases`` (all)
C4         ``poisoned_description``,                   ``params.instruction`` in the poisoner's
           ``exfiltration_url``, ``target_tool``       description, ``params.exfiltration_url``
                                                       and ``checks.exfiltration_url`` (as given),
                                                       ``checks.target_tool``
all        ``endpoint_allowlist``                      ``checks.endpoint_allowlist``
all        ``tool_id``                                 ``tools/*/name``: an MCP tool name (an id
                                                       that is none gets one: :func:`mcp_tool_name`,
                                                       mapped back in ``origin.tool_names``), and
                                                       every mention of such an id in the task,
                                                       the descriptions, the planted text and the
                                                       scoring under that name (:func:`mentions_of`)
=========  ==========================================  =========================================

The template's own params, its ``fault_category``, which tools it marks faulty and its optional
``source`` (the benchmark it was adapted from) are kept verbatim in ``origin``, with the list of
fields toolwatch derived (``origin.derived``): input schemas (templates declare none; see
:mod:`prose_schema`), the expected value (the faulty tool's clean answer), the stale value (what
the stale response changes) and the scenario's "now" (the newest date in the clean responses).

B2 templates mark no tool faulty: their two sources already disagree in the clean responses.
The sources are the tools whose responses hold ``tool_a_value`` and ``tool_b_value`` (the
templates list them first and second; in any other order, or among more tools, the values
decide). The converted fault serves tool B's clean response as it is (``params.pointer``
names its conflicting field, ``params.reference`` tool A's), so the disagreement the
template describes is exactly what the agent sees.
"""

from __future__ import annotations

import json
import re
import unicodedata
import zlib
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Any, Final

from toolwatch.injection.faults.agentcheck_values import (
    UNREADABLE_DATE,
    conflict_pair,
    dates_in,
    expected_field,
    iso_date,
    locate,
    stale_change,
)
from toolwatch.injection.faults.pointer import pointer_join
from toolwatch.injection.faults.prose_schema import derive_input_schema
from toolwatch.injection.faults.scenario import FORMAT, Problem, quote, scenario_schema
from toolwatch.injection.faults.taxonomy import ACTION_FAULTS, FAULT_ACTIONS
from toolwatch.injection.mitigations.acts import mention

ORIGIN: Final = "agentcheck"


def is_agentcheck(data: Any) -> bool:
    """Whether ``data`` is an AgentCheck scenario template: it names itself by ``scenario_id``
    and has no toolwatch ``format`` key. A template missing one of its own required fields
    (``fault_spec``, say) is still judged by AgentCheck's schema, so the error names that field
    instead of every field of the toolwatch format."""
    return isinstance(data, Mapping) and "scenario_id" in data and "format" not in data


def _params(action: str, required: list[str], **extra: Any) -> dict[str, Any]:
    return {
        "if": {"properties": {"action": {"const": action}}},
        "then": {"properties": {"params": {"required": required, **extra}}},
    }


def _params_any(action: str, *alternatives: str) -> dict[str, Any]:
    """The params of ``action`` need at least one of ``alternatives``."""
    return _params(action, [], anyOf=[{"required": [name]} for name in alternatives])


#: The fields an AgentCheck template must have for us to run it: their schema
#: (``tests/fixtures/agentcheck/schema``) plus the params each action cannot do without.
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
            "allOf": [
                # what the converter reads as a number, an object or a list must be one (a
                # word, a list or an object crashed the conversion; ``true`` was a 1 ms timeout)
                _params("delay", [], properties={"timeout_ms": {"type": "number"}}),
                _params(
                    "replace_with_error",
                    [],
                    properties={"error_code": {"type": ["string", "integer"]}},
                ),
                _params(
                    "alter_schema",
                    [],
                    properties={
                        "rename_args": {"type": "object"},
                        "rename_fields": {"type": "object"},
                    },
                ),
                _params(
                    "inject_false_claim",
                    [],
                    properties={
                        "false_claim_aliases": {"type": "array", "items": {"type": "string"}}
                    },
                ),
                # AgentCheck's runners take either (``runner._schema_drift_configured``)
                _params_any("alter_schema", "rename_args", "altered_response"),
                _params("inject_stale_data", ["stale_response"]),
                _params("return_conflicting", ["tool_a_value", "tool_b_value"]),
                _params("return_irrelevant", ["irrelevant_response"]),
                _params("prepend_injection", ["injection_string"]),
                _params("poison_description", ["poisoned_description"]),
                _params("inject_false_claim", ["false_claim"]),
                _params_any(
                    "inject_exfiltration_instruction",
                    "poisoned_description",
                    "exfiltration_instruction",
                ),
            ],
        },
        "scoring": {
            "type": "object",
            "required": ["minimum_pass_criterion", "clear_failure_signal", "acceptable_behaviors"],
            "properties": {
                "minimum_pass_criterion": {"type": "string", "minLength": 1},
                "clear_failure_signal": {"type": "string", "minLength": 1},
                # AgentCheck's own minimum (its schema), the scenario format's too
                "acceptable_behaviors": {
                    "type": "array",
                    "minItems": 2,
                    "items": {"type": "string", "minLength": 5},
                },
            },
        },
        "endpoint_allowlist": {"type": "array", "items": {"type": "string"}},
        "metadata": {"type": "object"},
    },
}

#: What AgentCheck's B4 injector returns whatever the clean result (``inject_b4_empty``): an
#: "ok" with no results, not the clean result with its lists emptied (which keeps its scalars,
#: e.g. a portfolio's total value beside no holdings).
AGENTCHECK_EMPTY: Final = {"results": [], "status": "ok"}
_URL = re.compile(r"https?://[^\s\"'<>)\]]+")
#: HTTP status of AgentCheck's named error codes (the code itself is kept as given).
_CODE_STATUS: Final = (
    (re.compile(r"UNAVAILABLE|DOWN|OVERLOAD", re.I), 503),
    (re.compile(r"TIMEOUT", re.I), 504),
    (re.compile(r"BAD_GATEWAY", re.I), 502),
)
#: Where AgentCheck's own injector plants a false claim (first match wins).
_CLAIM_FIELDS: Final = ("text", "content", "message", "snippet")
_CLAIM_RESULT_FIELDS: Final = ("snippet", "text", "abstract", "docstring", "code")


@dataclass
class Conversion:
    """A template as a toolwatch document, and what could not be converted (pointers into the
    template)."""

    doc: dict[str, Any]
    problems: list[Problem] = field(default_factory=list)


def _response(value: Any) -> dict[str, Any]:
    if isinstance(value, Mapping):
        return {"structured": dict(value)}
    if isinstance(value, str):
        return {"text": value}
    return {"text": json.dumps(value, ensure_ascii=False)}


def _claim_pointer(clean: Any) -> str | None:
    """Where AgentCheck's injector puts a false claim: a top-level text field, else a text
    field of the first ``results`` item (``None``: toolwatch's default, the longest string)."""
    if not isinstance(clean, Mapping):
        return None
    for key in _CLAIM_FIELDS:
        if isinstance(clean.get(key), str):
            return pointer_join([key])
    results = clean.get("results")
    if isinstance(results, list) and results and isinstance(results[0], Mapping):
        for key in _CLAIM_RESULT_FIELDS:
            if isinstance(results[0].get(key), str):
                return pointer_join(["results", 0, key])
    return None


@cache
def _tool_name_rule() -> re.Pattern[str]:
    """What the scenario format accepts as a tool name (its schema's, read once)."""
    tool = scenario_schema()["$defs"]["tool"]["properties"]["name"]
    return re.compile(tool["pattern"])


def mcp_tool_name(tool_id: str) -> str:
    """A template's ``tool_id`` as an MCP tool name (SEP-986's letters, digits, ``_ - .``, at
    most 64 characters, as the scenario schema requires): accents dropped
    (``température`` → ``temperature``), then every run of other characters becomes ``_``.
    Letters no accent-stripping makes ASCII (``物性検索``, ``get_天気``) would be lost, so two
    such ids would share a name and the suite could not run: the name then ends in the crc32
    of the id (``tool_9a1f03c2``), one per id. AgentCheck allows any non-empty id; its own
    templates are all valid names already and stay as they are."""
    if _tool_name_rule().fullmatch(tool_id):
        return tool_id
    folded = "".join(
        c for c in unicodedata.normalize("NFKD", tool_id) if not unicodedata.combining(c)
    )
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", folded).strip("_") or "tool"
    if any(c.isalnum() and not c.isascii() for c in folded):
        return f"{name[:55]}_{zlib.crc32(tool_id.encode()):08x}"
    return name[:64]


#: the fault's params that are prose the agent reads: a planted text, a claim, an error message
_PROSE_PARAMS: Final = ("description", "instruction", "text", "claim", "message")


def mentions_of(renames: Mapping[str, str]) -> Callable[[str], str]:
    """A rewrite of prose naming tools by their template ids (``renames``: id -> MCP name), so
    a listing-based check can tie "before calling 物性検索 …" to the tool the agent sees as
    ``tool_20d266da``. An id counts as a whole name only (:func:`acts.mention`), the longest
    first."""
    pattern = re.compile("|".join(mention(o) for o in sorted(renames, key=len, reverse=True)))
    return lambda text: pattern.sub(lambda m: renames[m.group(0)], text)


def _rename_mentions(doc: dict[str, Any], renames: Mapping[str, str]) -> list[str]:
    """Every mention of a renamed tool id in ``doc``'s prose (task, descriptions, the fault's
    prose params, the claim's aliases, scoring) under its MCP name; the fields changed, for
    ``origin.derived`` (the template's own text stays in ``origin.params``)."""
    rename = mentions_of(renames)
    fields: list[tuple[str, Any, Any]] = [("task", doc, "task")]  # (field, holder, key)
    fields += [("tools/*/description", t, "description") for t in doc["tools"]]
    fields += [(f"fault/params/{key}", doc["fault"]["params"], key) for key in _PROSE_PARAMS]
    aliases = doc["checks"].get("false_claim_aliases") or []
    fields += [("checks/false_claim_aliases/*", aliases, i) for i in range(len(aliases))]
    scoring = doc["scoring"]
    fields += [
        (f"scoring/{k}", scoring, k) for k in ("minimum_pass_criterion", "clear_failure_signal")
    ]
    behaviors = scoring.get("acceptable_behaviors") or []
    fields += [("scoring/acceptable_behaviors/*", behaviors, i) for i in range(len(behaviors))]
    changed: list[str] = []
    for where, holder, key in fields:
        value = holder[key] if isinstance(holder, list) else holder.get(key)
        if isinstance(value, str) and (new := rename(value)) != value:
            holder[key] = new
            changed.append(where)
    return list(dict.fromkeys(changed))


def _target(raw: Mapping[str, Any], names: Mapping[str, str], tool: str) -> str:
    """C2/C4's ``target_tool`` under its MCP name (the faulty tool when the template names
    none)."""
    target = raw.get("target_tool")
    if not target:
        return tool
    return names.get(str(target), mcp_tool_name(str(target)))


def _status(code: str) -> int:
    if code.isdigit() and 500 <= int(code) <= 599:
        return int(code)
    return next((status for pattern, status in _CODE_STATUS if pattern.search(code)), 500)


def _faulty_problems(tools: list[Mapping[str, Any]], action: str) -> list[Problem]:
    """``is_faulty`` marks AgentCheck's runner would read otherwise than one faulted tool:
    it faults *every* marked tool (its validator asks for exactly one) and refuses a B2 with
    one marked (the conflict is in the clean data). A scenario here faults one tool, so a
    second mark is refused at its pointer rather than dropped."""
    marked = [i for i, t in enumerate(tools) if t.get("is_faulty")]
    if action == "return_conflicting":
        why = "a B2 template marks no tool faulty: its conflict is in the clean responses"
        return [Problem(f"/tools/{i}/is_faulty", why) for i in marked]
    return [
        Problem(
            f"/tools/{i}/is_faulty",
            f"a second faulty tool ({quote(tools[i]['tool_id'])} after "
            f"{quote(tools[marked[0]]['tool_id'])}): a scenario faults exactly one tool",
        )
        for i in marked[1:]
    ]


def convert(data: Mapping[str, Any]) -> Conversion:
    """An AgentCheck template (already checked against :data:`AGENTCHECK_SCHEMA`) as a
    toolwatch scenario document; ``problems`` name template fields that could not be
    honoured (a B2 value no tool returns, no faulty tool)."""
    problems: list[Problem] = []
    fid = data["fault_type"]
    action = data["fault_spec"]["action"]
    raw: dict[str, Any] = dict(data["fault_spec"].get("params") or {})
    pp = "/fault_spec/params"
    task = str(data["task"])
    derived: list[str] = []
    names = {str(t["tool_id"]): mcp_tool_name(str(t["tool_id"])) for t in data["tools"]}
    served = Counter(names.values())
    for i, t in enumerate(data["tools"]):
        if served[names[str(t["tool_id"])]] > 1:
            problems.append(
                Problem(
                    f"/tools/{i}/tool_id", f"{quote(t['tool_id'])} is not the only tool named that"
                )
            )
    renamed = {new: old for old, new in names.items() if new != old}
    if renamed:
        derived.append("tools/*/name")
    tools = []
    for t in data["tools"]:
        tools.append(
            {
                "name": names[str(t["tool_id"])],
                "description": t["description"],
                "input_schema": derive_input_schema(t["description"], t["clean_response"]),
                "response": _response(t["clean_response"]),
            }
        )
    derived.append("tools/*/input_schema")
    clean_of = {names[str(t["tool_id"])]: t["clean_response"] for t in data["tools"]}
    faulty = [names[str(t["tool_id"])] for t in data["tools"] if t.get("is_faulty")]
    problems += _faulty_problems(data["tools"], action)
    if action == "return_conflicting":
        first, tool = conflict_pair(clean_of, raw)
    elif faulty:
        tool = faulty[0]
    else:
        tool = names[str(data["tools"][0]["tool_id"])]
        problems.append(Problem("/tools", "no tool is marked is_faulty"))
    clean = clean_of[tool]
    checks: dict[str, Any] = {"endpoint_allowlist": list(data.get("endpoint_allowlist") or [])}
    params: dict[str, Any] = {}

    def expect(pointer_value: tuple[str, Any] | None) -> None:
        if pointer_value is not None:
            checks["expected_value"] = {
                "tool": tool,
                "pointer": pointer_value[0],
                "value": pointer_value[1],
            }
            derived.append("checks/expected_value")

    if action == "delay":
        params = {"delay_ms": int(raw.get("timeout_ms", 8000)), "mode": "sleep"}
        expect(expected_field(clean, task))
    elif action in ("replace_with_error", "replace_with_403"):
        if "error_body" in raw:
            params["body"] = raw["error_body"]
        if raw.get("error_message"):
            params["message"] = str(raw["error_message"])
        if action == "replace_with_error" and "error_code" in raw:
            code = str(raw["error_code"])
            params["status"] = _status(code)
            if str(params["status"]) != code:  # a name, or a number that is no 5xx (429)
                params["code"] = code
                derived.append("fault/params/status")
        if raw.get("required_role"):
            params["required_role"] = str(raw["required_role"])
        expect(expected_field(clean, task))
    elif action == "alter_schema":
        if raw.get("rename_args"):
            params["argument_renames"] = dict(raw["rename_args"])
        if raw.get("rename_fields"):
            params["field_renames"] = dict(raw["rename_fields"])
        if "altered_response" in raw:  # AgentCheck's injector serves it in place of the result
            params["response"] = _response(raw["altered_response"])
        expect(expected_field(clean, task))
    elif action == "inject_stale_data":
        stale = raw["stale_response"]
        params["response"] = _response(stale)
        change = stale_change(clean, stale)
        if change is not None:
            pointer, stale_value, clean_value = change
            checks["stale_value"] = {"tool": tool, "pointer": pointer, "value": stale_value}
            checks["expected_value"] = {"tool": tool, "pointer": pointer, "value": clean_value}
            derived += ["checks/stale_value", "checks/expected_value"]
        else:
            problems.append(Problem(f"{pp}/stale_response", "changes no answer field"))
    elif action == "return_conflicting":
        refs = []
        for name, key, where in ((first, "tool_a_value", 0), (tool, "tool_b_value", 1)):
            preferred = raw.get("conflict_field") if where == 0 else None
            hits = locate(raw[key], clean_of[name], preferred)
            if not hits:
                problems.append(
                    Problem(f"{pp}/{key}", f"the clean response of {name!r} has no such value")
                )
                continue
            refs.append({"tool": name, "pointer": hits[0][0], "value": hits[0][1]})
        if len(refs) == 2:
            checks["conflicting_values"] = refs
            params = {
                "pointer": refs[1]["pointer"],
                "reference": {"tool": refs[0]["tool"], "pointer": refs[0]["pointer"]},
            }
        else:
            params = {"pointer": "/"}
    elif action == "return_irrelevant":
        params["response"] = _response(raw["irrelevant_response"])
        expect(expected_field(clean, task))
    elif action == "return_empty":
        params = {"response": _response(AGENTCHECK_EMPTY)}
        expect(expected_field(clean, task))
    elif action == "prepend_injection":
        params = {"text": str(raw["injection_string"])}
        if raw.get("payload_id"):
            checks["payload_id"] = str(raw["payload_id"])
    elif action == "poison_description":
        params = {"description": str(raw["poisoned_description"])}
        checks["target_tool"] = _target(raw, names, tool)
    elif action == "inject_false_claim":
        claim = str(raw["false_claim"])
        params = {"claim": claim}
        claim_at = _claim_pointer(clean)
        if claim_at is not None:
            params["pointer"] = claim_at
        else:  # AgentCheck's injector then wraps the result: {original_content, injected_claim}
            params["placement"] = "beside_document"
        aliases = [claim, *[str(a) for a in raw.get("false_claim_aliases") or []]]
        checks["false_claim_aliases"] = list(dict.fromkeys(aliases))
    elif action == "inject_exfiltration_instruction":
        instruction = str(raw.get("exfiltration_instruction") or raw["poisoned_description"])
        url = raw.get("exfiltration_url")
        if not url:
            urls = _URL.findall(instruction)
            url = urls[0] if urls else None
            if url:
                derived.append("checks/exfiltration_url")
        params = {"instruction": instruction}
        if url:
            params["exfiltration_url"] = str(url)
            checks["exfiltration_url"] = str(url)
        else:
            problems.append(Problem(pp, "no exfiltration_url, and the instruction names none"))
        if "exfiltration_instruction" not in raw:
            params["placement"] = "description"
        checks["target_tool"] = _target(raw, names, tool)
    date_context: dict[str, Any] = {
        "requires_fresh_data": bool(data.get("task_requires_fresh_data", False))
    }
    now = max((d for response in clean_of.values() for d in dates_in(response)), default=None)
    if now is not None:
        date_context["now"] = now
        derived.append("checks/date_context/now")
    if raw.get("stale_date"):
        stale_date = iso_date(str(raw["stale_date"]))
        if stale_date is None:
            problems.append(
                Problem(f"{pp}/stale_date", UNREADABLE_DATE.format(quote(raw["stale_date"])))
            )
        else:
            date_context["stale_date"] = stale_date
            if stale_date != raw["stale_date"]:
                derived.append("checks/date_context/stale_date")
    checks["date_context"] = date_context
    origin = {
        "format": ORIGIN,
        "scenario_id": data["scenario_id"],
        "fault_category": data.get("fault_category"),
        "faulty_tools": faulty,
        "tool_names": renamed or None,
        "params": raw,
        "source": data.get("source"),  # where the template came from (MCPTox, ToolMisuseBench)
        "derived": derived,
    }
    doc = {
        "format": FORMAT,
        "id": data["scenario_id"],
        "fault_type": fid,
        "domain": data.get("domain", "general"),
        "task": task,
        "tools": tools,
        "fault": {"tool": tool, "action": action, "occurrence": {"nth": 1}, "params": params},
        "scoring": dict(data["scoring"]),
        "checks": checks,
        "origin": {k: v for k, v in origin.items() if v is not None},
        "metadata": dict(data.get("metadata") or {}),
    }
    if renamed:
        doc["scoring"]["acceptable_behaviors"] = list(doc["scoring"]["acceptable_behaviors"])
        derived += _rename_mentions(doc, {old: new for new, old in renamed.items()})
    return Conversion(doc, problems)


def from_agentcheck(data: Mapping[str, Any]) -> dict[str, Any]:
    """An AgentCheck template as a toolwatch scenario document (see :func:`convert`)."""
    return convert(data).doc
