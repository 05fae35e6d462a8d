"""The 12 fault actions (BRIEF §4), one function each, registered by action name: each turns a due
call's clean result into the faulted effect, using only the fault's params and label.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, Final

from mcp_types import INTERNAL_ERROR, REQUEST_TIMEOUT

from toolwatch.conventions import (
    LABEL_META_KEY,
)
from toolwatch.injection.faults.edits import (
    edit_json,
    error_result,
    label_result,
    parse_json_text,
    plant,
    rename_keys,
    response_result,
)
from toolwatch.injection.faults.effects import (
    PERMISSION_DENIED_CODE,
    Action,
    CallPlan,
    FaultContext,
    FaultEffect,
    RpcError,
)
from toolwatch.injection.faults.pointer import set_pointer

_HTTP_REASONS: Final[dict[int, str]] = {
    500: "Internal Server Error",
    501: "Not Implemented",
    502: "Bad Gateway",
    503: "Service Unavailable",
    504: "Gateway Timeout",
}


def _failure(
    engine: FaultContext,
    clean: dict[str, Any] | None,
    *,
    status: int,
    message: str,
    code: int,
    what: str,
    rpc_message: str | None = None,
    fields: Mapping[str, Any] | None = None,
    delay_s: float = 0.0,
) -> FaultEffect:
    """A failed call as the scenario's ``as`` says: a JSON-RPC error (``jsonrpc_code``, the
    label in ``data``) or an ``is_error`` result with a JSON body (``body`` overrides it)."""
    p = engine.params
    extra = dict(fields or {})
    if p.get("as", "result") == "jsonrpc":
        data = {"status": status, **extra, LABEL_META_KEY: engine.label}
        code = int(p.get("jsonrpc_code", code))
        return FaultEffect(
            True,
            error=RpcError(code, rpc_message or message, data),
            delay_s=delay_s,
            note=f"{what} as JSON-RPC error {code}",
        )
    body = p.get("body") or {"error": {"status": status, **extra, "message": message}}
    return FaultEffect(
        True,
        error_result(body, engine.label, clean),
        delay_s=delay_s,
        note=f"{what} as is_error result",
    )


def _delay(engine: FaultContext, plan: CallPlan, clean: dict[str, Any] | None) -> FaultEffect:
    p = engine.params
    ms = int(p["delay_ms"])
    if p.get("mode", "sleep") == "sleep":
        assert clean is not None
        return FaultEffect(
            True, label_result(clean, engine.label), delay_s=ms / 1000, note=f"held {ms} ms"
        )
    return _failure(
        engine,
        clean,
        status=504,
        message=p.get("message") or f"Gateway Timeout: the tool did not respond within {ms} ms",
        code=REQUEST_TIMEOUT,
        what="timeout",
        delay_s=int(p.get("error_after_ms", 0)) / 1000,
    )


def _server_error(
    engine: FaultContext, plan: CallPlan, clean: dict[str, Any] | None
) -> FaultEffect:
    p = engine.params
    status = int(p.get("status", 500))
    message = p.get("message") or _HTTP_REASONS.get(status, "Server Error")
    return _failure(
        engine,
        clean,
        status=status,
        message=message,
        rpc_message=f"{status} {message}",
        code=INTERNAL_ERROR,
        what=f"server error {status}",
        fields={"code": p["code"]} if p.get("code") else None,  # the server's own name for it
    )


def _forbidden(engine: FaultContext, plan: CallPlan, clean: dict[str, Any] | None) -> FaultEffect:
    p = engine.params
    role = p.get("required_role")
    message = p.get("message") or (
        f"Permission denied: calling {plan.tool} requires role {role!r}"
        if role
        else f"Permission denied: the caller is not allowed to call {plan.tool}"
    )
    fields: dict[str, Any] = (
        {} if p.get("as", "result") == "jsonrpc" else {"code": "permission_denied"}
    )
    if role:
        fields["required_role"] = role
    return _failure(
        engine,
        clean,
        status=403,
        message=message,
        code=PERMISSION_DENIED_CODE,
        what="permission denied (403)",
        fields=fields,
    )


def _replaced(engine: FaultContext, clean: dict[str, Any] | None) -> FaultEffect | None:
    """The scenario's ``response`` replacement, when it gives one (A4, B1, B2, B4)."""
    if "response" not in engine.params:
        return None
    result = response_result(engine.params["response"], engine.label, clean)
    return FaultEffect(True, result, note="response replaced")


def _alter_schema(
    engine: FaultContext, plan: CallPlan, clean: dict[str, Any] | None
) -> FaultEffect:
    p = engine.params
    if (replaced := _replaced(engine, clean)) is not None:
        return replaced
    assert clean is not None
    renames = p.get("field_renames") or {}
    edited, changed = (
        edit_json(clean, lambda d: rename_keys(d, renames)) if renames else (clean, False)
    )
    note = "result fields renamed" if changed else "arguments renamed"
    if renames and not changed and not p.get("argument_renames"):
        return FaultEffect(False, clean, note="no field to rename in the result")
    return FaultEffect(True, label_result(edited, engine.label), note=note)


def _patch(engine: FaultContext, plan: CallPlan, clean: dict[str, Any] | None) -> FaultEffect:
    """B1 and B2: overwrite fields (old values / values contradicting another tool)."""
    if (replaced := _replaced(engine, clean)) is not None:
        return replaced
    assert clean is not None
    if "patch" not in engine.params:
        # B2 as AgentCheck writes it: the clean value already contradicts the reference tool
        pointer = engine.params.get("pointer", "")
        return FaultEffect(
            True, label_result(clean, engine.label), note=f"served the clean value at {pointer}"
        )
    patch: Mapping[str, Any] = engine.params["patch"]

    def edit(doc: Any) -> bool:
        changed = False
        for pointer, value in patch.items():
            try:
                set_pointer(doc, pointer, copy.deepcopy(value))
                changed = True
            except (KeyError, ValueError):
                continue
        return changed

    edited, changed = edit_json(clean, edit)
    if not changed:
        return FaultEffect(False, clean, note=f"no field at {', '.join(patch)} in the result")
    return FaultEffect(True, label_result(edited, engine.label), note=f"patched {', '.join(patch)}")


def _irrelevant(engine: FaultContext, plan: CallPlan, clean: dict[str, Any] | None) -> FaultEffect:
    result = response_result(engine.params["response"], engine.label, clean)
    return FaultEffect(True, result, note="response replaced by an irrelevant one")


def _empty_doc(doc: Any) -> bool:
    """Empty every array in ``doc``; a doc without arrays becomes ``{}``."""
    found = False

    def walk(node: Any) -> None:
        nonlocal found
        if isinstance(node, list):
            found = True
            node.clear()
        elif isinstance(node, dict):
            for value in node.values():
                walk(value)

    walk(doc)
    if not found and isinstance(doc, dict) and doc:
        doc.clear()
        return True
    return found


def _empty(engine: FaultContext, plan: CallPlan, clean: dict[str, Any] | None) -> FaultEffect:
    if (replaced := _replaced(engine, clean)) is not None:
        return replaced
    assert clean is not None
    if clean.get("isError"):
        # B4 is a tool that answers "ok, nothing": emptying a failure would make a success of
        # it and hide the error (not B4's fault), so, like a patch without its field, the
        # fault does not apply (a given ``response`` is served without calling the tool)
        return FaultEffect(False, clean, note="the result is an error: nothing to empty")
    mode = engine.params.get("mode", "empty_collections")
    base: dict[str, Any] = {"_meta": clean.get("_meta") or {}, "isError": False}
    result: dict[str, Any]
    if mode == "no_content":
        result = {**base, "content": []}
    elif mode == "empty_text":
        result = {**base, "content": [{"type": "text", "text": ""}]}
    else:
        result, _ = edit_json(clean, _empty_doc)
        result["isError"] = False
        for block in result.get("content") or []:
            if block.get("type") == "text" and parse_json_text(block.get("text", "")) is None:
                block["text"] = ""
    return FaultEffect(True, label_result(result, engine.label), note=f"emptied ({mode})")


def _injection(default_placement: str, text_param: str) -> Action:
    def action(engine: FaultContext, plan: CallPlan, clean: dict[str, Any] | None) -> FaultEffect:
        assert clean is not None
        p = engine.params
        planted, note = plant(
            clean, p[text_param], p.get("placement", default_placement), p.get("pointer")
        )
        return FaultEffect(True, label_result(planted, engine.label), note=note)

    return action


def _listing_only(
    engine: FaultContext, plan: CallPlan, clean: dict[str, Any] | None
) -> FaultEffect:
    return FaultEffect(False, clean, note="fault lives in tools/list")


ACTIONS: Final[dict[str, Action]] = {
    "delay": _delay,
    "replace_with_error": _server_error,
    "replace_with_403": _forbidden,
    "alter_schema": _alter_schema,
    "inject_stale_data": _patch,
    "return_conflicting": _patch,
    "return_irrelevant": _irrelevant,
    "return_empty": _empty,
    "prepend_injection": _injection("prepend_block", "text"),
    "poison_description": _listing_only,
    "inject_false_claim": _injection("in_document", "claim"),
    "inject_exfiltration_instruction": _injection("append_block", "instruction"),
}
