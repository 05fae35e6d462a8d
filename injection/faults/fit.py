"""Whether an armed scenario can act on a real server: its ``tools/list`` checked against the
fault, before the first call.

A scenario is validated against its own ``tools``; in front of a real upstream those are not
the tools a client gets. A fault on a tool the upstream does not list, or an A4 rename of an
argument its input schema does not have, would never fire, and a silent fault whose result the
upstream's declared ``outputSchema`` rejects would not be silent. Each is a :class:`Problem` at
the scenario field that is wrong, so the proxy refuses to start instead of proxying unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import jsonschema

from toolwatch.injection.faults.effects import CallPlan
from toolwatch.injection.faults.engine import FaultEngine
from toolwatch.injection.faults.scenario import Problem, Scenario, quote
from toolwatch.injection.faults.taxonomy import SILENT_FAULTS
from toolwatch.injection.faults.validation import _message as schema_message

#: A result the probe applies the fault to: structured content present, so a fault that drops
#: it (a replacement without ``structured``, B4's ``no_content`` / ``empty_text``) shows.
_PROBE: Mapping[str, Any] = {
    "content": [{"type": "text", "text": '{"probe": "value"}'}],
    "structuredContent": {"probe": "value"},
    "isError": False,
}


def upstream_problems(
    scenario: Scenario, tools: Sequence[Mapping[str, Any]], upstream: str
) -> list[Problem]:
    """Why ``scenario``'s fault cannot act as written on an upstream listing ``tools`` (wire
    form, camelCase keys); empty when it can."""
    fault = scenario.fault
    by_name = {t.get("name"): t for t in tools}
    tool = by_name.get(fault.tool)
    if tool is None:
        listed = ", ".join(sorted(str(n) for n in by_name)) or "nothing"
        return [
            Problem(
                "/fault/tool",
                f"upstream {upstream} lists no tool {quote(fault.tool)} (it lists: {listed}): "
                "the fault could never fire",
            )
        ]
    if fault.action == "alter_schema":
        return _rename_problems(fault.params, tool, upstream)
    if scenario.fault_type in SILENT_FAULTS and isinstance(tool.get("outputSchema"), Mapping):
        return _silence_problems(scenario, tool, upstream)
    return []


def _rename_problems(
    params: Mapping[str, Any], tool: Mapping[str, Any], upstream: str
) -> list[Problem]:
    """A4 renames of arguments the upstream's input schema does not declare (never named by a
    valid call, so never faulted), or to a name it already has."""
    declared = (tool.get("inputSchema") or {}).get("properties")
    if not isinstance(declared, Mapping):
        return []
    problems = []
    names = ", ".join(declared) or "none"
    for old, new in (params.get("argument_renames") or {}).items():
        where = f"/fault/params/argument_renames/{old.replace('~', '~0').replace('/', '~1')}"
        if old not in declared:
            problems.append(
                Problem(
                    where,
                    f"tool {quote(tool['name'])} of upstream {upstream} has no argument "
                    f"{quote(old)} (it has: {names}): the rename could never apply",
                )
            )
        elif new in declared:
            problems.append(
                Problem(
                    where,
                    f"tool {quote(tool['name'])} of upstream {upstream} already has an "
                    f"argument {quote(new)}",
                )
            )
    return problems


def _silence_problems(scenario: Scenario, tool: Mapping[str, Any], upstream: str) -> list[Problem]:
    """A silent fault whose result the upstream's declared ``outputSchema`` makes the mcp
    client reject (``RuntimeError``): no structured content, or a replacement that does not
    match the schema."""
    engine = FaultEngine.for_scenario(scenario)
    effect = engine.apply(CallPlan(scenario.fault.tool, 1, True, {}), dict(_PROBE))
    if not effect.applied or effect.result is None:
        return []
    structured = effect.result.get("structuredContent")
    about = (
        f"upstream {upstream} declares an outputSchema for {quote(tool['name'])}, and the "
        "mcp client rejects a result"
    )
    if structured is None:
        return [
            Problem(
                "/fault/params",
                f"{about} without structured content: the {scenario.fault.action} result has "
                "none, so the fault would not be silent (give it a structured response)",
            )
        ]
    if "response" not in scenario.fault.params:
        return []  # the upstream's own result, edited: its shape is the upstream's
    validator = jsonschema.Draft202012Validator(dict(tool["outputSchema"]))
    error = next(iter(validator.iter_errors(structured)), None)
    if error is None:
        return []
    return [
        Problem(
            "/fault/params/response/structured",
            f"{about} that breaks it ({schema_message(error)}): the fault would not be silent",
        )
    ]
