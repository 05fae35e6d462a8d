"""Scenario JSON ⇄ the model: building a Scenario from validated data and writing it back (the round
trip `scenarios show --json` relies on).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict
from typing import Any

from toolwatch.injection.faults.scenario import (
    FORMAT,
    Checks,
    CleanResponse,
    DateContext,
    FaultSpec,
    Occurrence,
    Scenario,
    Scoring,
    ToolSpec,
    ValueRef,
)

# --------------------------------------------------------------------------------------------
# Building the model from a validated document
# --------------------------------------------------------------------------------------------


def _value_ref(data: Mapping[str, Any] | None) -> ValueRef | None:
    return None if not data else ValueRef(data["tool"], data["pointer"], data["value"])


def build_scenario(data: Mapping[str, Any], source: str, fmt: str) -> Scenario:
    tools = tuple(
        ToolSpec(
            name=t["name"],
            description=t["description"],
            input_schema=t["input_schema"],
            response=CleanResponse(t["response"].get("text"), t["response"].get("structured")),
            output_schema=t.get("output_schema"),
            annotations=t.get("annotations"),
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
            target_tool=c.get("target_tool"),
            date_context=None if "date_context" not in c else DateContext(**c["date_context"]),
        ),
        metadata=data.get("metadata", {}),
        source=source,
        format=fmt,
        origin=data.get("origin"),
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
        "target_tool": c.target_tool,
        "date_context": None
        if c.date_context is None
        else {k: v for k, v in asdict(c.date_context).items() if v is not None},
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
        if t.annotations is not None:
            tool["annotations"] = t.annotations
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
        **({} if scenario.origin is None else {"origin": dict(scenario.origin)}),
        "metadata": dict(scenario.metadata),
    }
