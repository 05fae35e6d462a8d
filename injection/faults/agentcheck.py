"""AgentCheck templates (aritra741/AgentCheck) converted to toolwatch scenarios."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from typing import Any, Final

from toolwatch.injection.faults.pointer import pointer_join
from toolwatch.injection.faults.scenario import FORMAT
from toolwatch.injection.faults.taxonomy import ACTION_FAULTS, FAULT_ACTIONS


def is_agentcheck(data: Any) -> bool:
    """Whether ``data`` is an AgentCheck scenario template (``scenario_id`` + ``fault_spec``)."""
    return isinstance(data, Mapping) and "scenario_id" in data and "fault_spec" in data


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
