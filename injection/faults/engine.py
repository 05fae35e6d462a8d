"""The fault engine: the 12 fault actions, once, as pure functions over wire-form MCP values.

Both the live proxy (faults on real upstream responses) and the workbench (faults on recorded
responses) use this engine, so a fault means the same thing everywhere. Values are wire-form
JSON dicts (``CallToolResult.model_dump(by_alias=True, mode="json", exclude_none=True)``,
``Tool`` likewise): the engine never sees a transport.

A call goes through two steps because schema drift (A4) must act before the upstream is asked:

* :meth:`FaultEngine.plan` (tool, arguments, occurrence, tool list) decides whether the fault
  is due, rejects calls that use renamed-away argument names, maps new names back for the
  upstream, and says whether the clean result is needed at all;
* :meth:`FaultEngine.apply` (plan, clean result) returns the :class:`FaultEffect`: the result
  or JSON-RPC error to deliver and how long to hold it.

``tools/list`` faults (A4's renamed input schema, C2's poisoned description, C4 placed in a
description) go through :meth:`FaultEngine.rewrite_listing`. Every faulted result carries the
ground-truth label under ``_meta["toolwatch/label"]`` (for a JSON-RPC error, in its ``data``).
:meth:`FaultEffect.deliver` is the one place a server turns an effect into its answer.
"""

from __future__ import annotations

import copy
import json
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, cast

import anyio
import mcp_types as types
from mcp import MCPError
from mcp.server.context import ServerRequestContext
from mcp_types import INTERNAL_ERROR, REQUEST_TIMEOUT

from toolwatch.conventions import (
    INJECTION_NOTIFICATION,
    LABEL_META_KEY,
    REQUEST_META_KEY,
    TOOL_META_KEY,
)
from toolwatch.injection.faults.scenario import (
    FaultSpec,
    Scenario,
    argument_errors,
    pointer_join,
    resolve_pointer,
    set_pointer,
)

logger = logging.getLogger(__name__)

#: JSON-RPC code of a permission-denied error (implementation-defined server error range).
PERMISSION_DENIED_CODE: Final = -32003

_HTTP_REASONS: Final[dict[int, str]] = {
    500: "Internal Server Error",
    501: "Not Implemented",
    502: "Bad Gateway",
    503: "Service Unavailable",
    504: "Gateway Timeout",
}


@dataclass(frozen=True, slots=True)
class RpcError:
    """A JSON-RPC error to answer with instead of a result."""

    code: int
    message: str
    data: dict[str, Any]


@dataclass(frozen=True, slots=True)
class CallPlan:
    """What to do with one call before the upstream is asked."""

    tool: str
    occurrence: int
    due: bool
    arguments: dict[str, Any]
    call_upstream: bool = True
    reject: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class FaultEffect:
    """The outcome of a call: deliver ``result`` (or raise ``error``) after ``delay_s``."""

    applied: bool
    result: dict[str, Any] | None = None
    error: RpcError | None = None
    delay_s: float = 0.0
    note: str = ""

    async def deliver(
        self, announce: Callable[[], Awaitable[None]] | None = None
    ) -> types.CallToolResult:
        """Answer the call the way a server does: hold ``delay_s`` (a real wait, so the
        client's own deadline can expire), then raise the JSON-RPC error or return the
        result. The proxy and the workbench's replay server both answer through this.
        ``announce`` runs before a hold (see :func:`announce_injection`): a client that
        gives up first never sees the labelled answer."""
        if self.delay_s > 0:
            if announce is not None:
                await announce()
            await anyio.sleep(self.delay_s)
        if self.error is not None:
            raise MCPError(self.error.code, self.error.message, self.error.data)
        assert self.result is not None
        return types.CallToolResult.model_validate(self.result)


async def announce_injection(ctx: ServerRequestContext[Any, Any], tool: str, label: str) -> None:
    """Tell the client, on this request's own stream, that the call is injected with ``label``.

    A vendor notification (:data:`~toolwatch.record.INJECTION_NOTIFICATION`) whose ``_meta``
    holds the label, the call's JSON-RPC id and the tool name, never content: the
    instrumentation puts the label on the call's span even when the client times out before
    the (labelled) answer arrives; other clients drop the unknown method. Best effort: a
    transport that cannot carry it costs the label, never the call.
    """
    meta = {LABEL_META_KEY: label, REQUEST_META_KEY: ctx.request_id, TOOL_META_KEY: tool}
    note = types.Notification[types.NotificationParams, str](
        method=INJECTION_NOTIFICATION, params=types.NotificationParams(_meta=meta)
    )
    try:
        await ctx.session.send_notification(
            cast(types.ServerNotification, note), related_request_id=ctx.request_id
        )
    except Exception as exc:  # the fault must still be served
        logger.warning("could not announce injection %s on %r: %s", label, tool, exc)


@dataclass(frozen=True, slots=True)
class ListingEffect:
    tools: list[dict[str, Any]]
    applied: bool
    note: str = ""


# --------------------------------------------------------------------------------------------
# Small pure helpers over wire-form results
# --------------------------------------------------------------------------------------------


def label_result(result: Mapping[str, Any], label: str) -> dict[str, Any]:
    """A copy of ``result`` carrying ``label`` under ``_meta["toolwatch/label"]``."""
    out = copy.deepcopy(dict(result))
    meta = dict(out.get("_meta") or {})
    meta[LABEL_META_KEY] = label
    out["_meta"] = meta
    return out


def _error_result(body: Any, label: str, base: Mapping[str, Any] | None) -> dict[str, Any]:
    text = body if isinstance(body, str) else json.dumps(body, ensure_ascii=False)
    meta = dict((base or {}).get("_meta") or {})
    meta[LABEL_META_KEY] = label
    return {"_meta": meta, "content": [{"type": "text", "text": text}], "isError": True}


def _response_result(spec: Mapping[str, Any], label: str, base: Mapping[str, Any] | None) -> dict:
    """A replacement response (``{"text"?, "structured"?}``), keeping the clean ``_meta``."""
    structured = spec.get("structured")
    text = spec.get("text")
    if text is None:
        text = json.dumps(structured, ensure_ascii=False)
    result: dict[str, Any] = {
        "_meta": dict((base or {}).get("_meta") or {}),
        "content": [{"type": "text", "text": text}],
        "isError": False,
    }
    if structured is not None:
        result["structuredContent"] = copy.deepcopy(dict(structured))
    return label_result(result, label)


def _parse_json_text(text: str) -> Any:
    stripped = text.lstrip()
    if not stripped.startswith(("{", "[")):
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None


def edit_json(
    result: Mapping[str, Any], edit: Callable[[Any], bool]
) -> tuple[dict[str, Any], bool]:
    """Apply ``edit`` (mutates a JSON doc, returns whether it changed it) to the result's
    structured content and to every text block that holds JSON, keeping the two in step."""
    out = copy.deepcopy(dict(result))
    changed = False
    if isinstance(out.get("structuredContent"), dict):
        changed |= edit(out["structuredContent"])
    for block in out.get("content") or []:
        if block.get("type") != "text":
            continue
        doc = _parse_json_text(block.get("text", ""))
        if doc is None:
            continue
        if edit(doc):
            changed = True
            indent = 2 if "\n" in block["text"].strip() else None
            block["text"] = json.dumps(doc, ensure_ascii=False, indent=indent)
    return out, changed


def _json_doc(result: Mapping[str, Any]) -> Any:
    """The result's JSON: structured content, else the first text block that parses."""
    if isinstance(result.get("structuredContent"), dict):
        return result["structuredContent"]
    for block in result.get("content") or []:
        if block.get("type") == "text":
            doc = _parse_json_text(block.get("text", ""))
            if doc is not None:
                return doc
    return None


def longest_string_pointer(doc: Any) -> str | None:
    """Pointer of the longest string in ``doc`` (the document body), first one on ties."""
    best: tuple[int, list[Any]] | None = None
    stack: list[tuple[Any, list[Any]]] = [(doc, [])]
    order: list[tuple[int, list[Any]]] = []
    while stack:
        node, path = stack.pop(0)
        if isinstance(node, str):
            order.append((len(node), path))
        elif isinstance(node, Mapping):
            stack[0:0] = [(v, [*path, k]) for k, v in node.items()]
        elif isinstance(node, list):
            stack[0:0] = [(v, [*path, i]) for i, v in enumerate(node)]
    for length, path in order:
        if best is None or length > best[0]:
            best = (length, path)
    return None if best is None else pointer_join(best[1])


def rename_keys(doc: Any, renames: Mapping[str, str]) -> bool:
    """Rename object keys everywhere in ``doc`` (in place, order kept); whether any changed."""
    changed = False
    if isinstance(doc, dict):
        if any(k in renames for k in doc):
            items = [(renames.get(k, k), v) for k, v in doc.items()]
            doc.clear()
            doc.update(items)
            changed = True
        for value in doc.values():
            changed |= rename_keys(value, renames)
    elif isinstance(doc, list):
        for value in doc:
            changed |= rename_keys(value, renames)
    return changed


def rename_schema(schema: Mapping[str, Any] | None, renames: Mapping[str, str]) -> dict[str, Any]:
    """A JSON Schema with its object properties (and ``required`` entries) renamed, recursively."""
    out = copy.deepcopy(dict(schema or {"type": "object"}))

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            props = node.get("properties")
            if isinstance(props, dict):
                node["properties"] = {renames.get(k, k): v for k, v in props.items()}
            if isinstance(node.get("required"), list):
                node["required"] = [renames.get(r, r) for r in node["required"]]
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(out)
    return out


def _plant(
    result: Mapping[str, Any], text: str, placement: str, pointer: str | None
) -> tuple[dict[str, Any], str]:
    """Put ``text`` into a result: as a first/last text block, or inside the document body."""
    out = copy.deepcopy(dict(result))
    block = {"type": "text", "text": text}
    if placement == "prepend_block":
        out["content"] = [block, *(out.get("content") or [])]
        return out, "text block prepended"
    if placement == "append_block":
        out["content"] = [*(out.get("content") or []), block]
        return out, "text block appended"
    doc = _json_doc(out)
    target = pointer
    if doc is not None and target is None:
        target = longest_string_pointer(doc)
    if doc is not None and target is not None:

        def edit(d: Any) -> bool:
            try:
                value = resolve_pointer(d, target)
            except (KeyError, ValueError):
                return False
            if not isinstance(value, str):
                return False
            set_pointer(d, target, f"{value} {text}" if value else text)
            return True

        edited, changed = edit_json(out, edit)
        if changed:
            return edited, f"planted in document at {target}"
    for existing in out.get("content") or []:
        if existing.get("type") == "text":
            existing["text"] = f"{existing['text']}\n\n{text}" if existing["text"] else text
            return out, "appended to the first text block"
    out["content"] = [*(out.get("content") or []), block]
    return out, "text block appended"


def _tool_in(tools: Sequence[Mapping[str, Any]], name: str) -> Mapping[str, Any] | None:
    return next((t for t in tools if t.get("name") == name), None)


# --------------------------------------------------------------------------------------------
# The engine
# --------------------------------------------------------------------------------------------

Action = Callable[["FaultEngine", CallPlan, "dict[str, Any] | None"], FaultEffect]


class FaultEngine:
    """One armed fault. Every method is a pure function of its arguments and the spec."""

    def __init__(self, fault: FaultSpec, label: str, *, seed: int = 0) -> None:
        if fault.action not in _ACTIONS:
            raise ValueError(f"unknown fault action {fault.action!r}")
        self.fault = fault
        self.label = label
        self.seed = seed
        self.params: Mapping[str, Any] = fault.params

    @classmethod
    def for_scenario(cls, scenario: Scenario, *, seed: int = 0) -> FaultEngine:
        return cls(scenario.fault, scenario.label, seed=seed)

    # -- which calls -------------------------------------------------------------------------

    def targets(self, tool: str) -> bool:
        return tool == self.fault.tool

    def due(self, occurrence: int) -> bool:
        """Whether occurrence ``occurrence`` (1-based) is faulted under the occurrence rule."""
        return self.fault.occurrence.due(occurrence, seed=self.seed, key=self.label)

    @property
    def counts_listings(self) -> bool:
        """The fault lives in ``tools/list`` (C2, C4 in a description): occurrences are
        listings, and calls of the tool are only labelled while its listing is poisoned."""
        action = self.fault.action
        return action == "poison_description" or (
            action == "inject_exfiltration_instruction"
            and self.params.get("placement") == "description"
        )

    @property
    def rewrites_listing(self) -> bool:
        """Whether ``tools/list`` changes when the fault is due: A4 announces renamed
        arguments (the server enforces them) and, only with ``rename_output_schema``, renamed
        result fields; by default the declared output schema stays, so drifted results break
        the declaration the client holds."""
        if self.counts_listings:
            return True
        p = self.params
        return self.fault.action == "alter_schema" and bool(
            p.get("argument_renames") or (p.get("field_renames") and p.get("rename_output_schema"))
        )

    def describe(self) -> str:
        """One line saying what is armed (for the proxy's start-up message)."""
        basis = "tools/list response" if self.counts_listings else "call"
        rule = self.fault.occurrence.describe().replace("call", basis, 1)
        extras = ", ".join(f"{k}={v!r}" for k, v in _summary_params(self.params).items())
        return (
            f"{self.fault.fault_id} {self.fault.action} on tool {self.fault.tool!r} at {rule}"
            f"{' (' + extras + ')' if extras else ''}; label {self.label}"
        )

    # -- tools/call ----------------------------------------------------------------------------

    def plan(
        self,
        tool: str,
        arguments: Mapping[str, Any] | None,
        occurrence: int,
        tools: Sequence[Mapping[str, Any]] = (),
    ) -> CallPlan:
        args = dict(arguments or {})
        if not self.targets(tool) or self.counts_listings or not self.due(occurrence):
            return CallPlan(tool, occurrence, False, args)
        renames = dict(self.params.get("argument_renames") or {})
        if self.fault.action == "alter_schema" and renames:
            listed = _tool_in(tools, tool)
            schema = rename_schema((listed or {}).get("inputSchema"), renames)
            problems = [f"{old}: unexpected argument" for old in renames if old in args]
            problems += [p for p in argument_errors(schema, args) if p not in problems]
            if problems:
                text = (
                    f"Error executing tool {tool}: {len(problems)} validation error"
                    f"{'s' if len(problems) > 1 else ''} for {tool} arguments\n"
                    + "\n".join(problems)
                )
                reject = _error_result(text, self.label, None)
                return CallPlan(tool, occurrence, True, args, call_upstream=False, reject=reject)
            back = {new: old for old, new in renames.items()}
            args = {back.get(k, k): v for k, v in args.items()}
        return CallPlan(tool, occurrence, True, args, call_upstream=self._needs_clean())

    def _needs_clean(self) -> bool:
        """Whether the fault reads the clean result (otherwise the upstream is not called: a
        denied or failed call does not run, so it has no side effects)."""
        action, p = self.fault.action, self.params
        if action in ("replace_with_error", "replace_with_403", "return_irrelevant"):
            return False
        if action == "delay":
            return p.get("mode", "sleep") == "sleep"
        if action in ("inject_stale_data", "return_conflicting", "alter_schema"):
            return "response" not in p
        return True

    def apply(self, plan: CallPlan, clean: Mapping[str, Any] | None) -> FaultEffect:
        """The effect of a planned call given the upstream's clean result (``None`` when the
        plan said not to call it)."""
        if plan.reject is not None:
            return FaultEffect(True, result=plan.reject, note="call rejected: old argument names")
        if not plan.due:
            return FaultEffect(False, result=None if clean is None else dict(clean))
        return _ACTIONS[self.fault.action](self, plan, None if clean is None else dict(clean))

    def call(
        self,
        tool: str,
        arguments: Mapping[str, Any] | None,
        clean: Mapping[str, Any],
        tools: Sequence[Mapping[str, Any]] = (),
        occurrence: int = 1,
    ) -> FaultEffect:
        """Plan and apply in one step, for replaying a recorded clean result."""
        plan = self.plan(tool, arguments, occurrence, tools)
        return self.apply(plan, clean if plan.call_upstream else None)

    # -- tools/list ----------------------------------------------------------------------------

    def rewrite_listing(
        self, tools: Sequence[Mapping[str, Any]], *, listing: int, next_call: int
    ) -> ListingEffect:
        """The ``tools/list`` the client sees. ``listing`` is this listing's 1-based number,
        ``next_call`` the number the target tool's next call will have: A4 shows the drifted
        schema exactly when that next call will be served drifted."""
        out = [copy.deepcopy(dict(t)) for t in tools]
        if not self.rewrites_listing:
            return ListingEffect(out, False)
        due = self.due(listing) if self.counts_listings else self.due(next_call)
        target = next((t for t in out if t.get("name") == self.fault.tool), None)
        if not due or target is None:
            return ListingEffect(out, False)
        p = self.params
        if self.fault.action == "alter_schema":
            before = copy.deepcopy(target)
            if p.get("argument_renames"):
                target["inputSchema"] = rename_schema(
                    target.get("inputSchema"), p["argument_renames"]
                )
            if (
                p.get("rename_output_schema")
                and p.get("field_renames")
                and target.get("outputSchema")
            ):
                target["outputSchema"] = rename_schema(target["outputSchema"], p["field_renames"])
            if target == before:
                return ListingEffect(out, False)
            return ListingEffect(out, True, "schema renamed")
        original = target.get("description") or ""
        if self.fault.action == "poison_description":
            if "description" in p:
                target["description"] = p["description"]
            else:
                target["description"] = f"{original}\n\n{p['append']}" if original else p["append"]
        else:
            target["description"] = (
                f"{original}\n\n{p['instruction']}" if original else p["instruction"]
            )
        return ListingEffect(out, True, "description rewritten")

    def poisoned_after(
        self, tools: Sequence[Mapping[str, Any]], effect: ListingEffect, before: bool
    ) -> bool:
        """Whether the poisoned description is in force once this listing (the upstream's
        ``tools``, rewritten into ``effect``) is served: a listing naming the target replaces
        what the client holds; one without it (another page) changes nothing."""
        if not self.counts_listings or _tool_in(tools, self.fault.tool) is None:
            return before
        return effect.applied

    def listed_call(self, clean: Mapping[str, Any], *, poisoned: bool) -> FaultEffect:
        """A call of the target tool of a ``tools/list`` fault (C2, C4 in a description): its
        result is the clean one, labelled while the poisoned description is in force, since
        the agent made the call under it."""
        if not poisoned:
            return FaultEffect(False, dict(clean), note="clean listing in force")
        return FaultEffect(
            True, label_result(clean, self.label), note="served under a poisoned listing"
        )


def _summary_params(params: Mapping[str, Any]) -> dict[str, Any]:
    """The params worth printing at start-up (short scalars, never document text)."""
    keep = (
        "delay_ms",
        "mode",
        "as",
        "status",
        "required_role",
        "placement",
        "rename_output_schema",
    )
    out = {k: params[k] for k in keep if k in params}
    if "argument_renames" in params:
        out["argument_renames"] = dict(params["argument_renames"])
    if "field_renames" in params:
        out["field_renames"] = dict(params["field_renames"])
    if "patch" in params:
        out["patch"] = sorted(params["patch"])
    return out


# --------------------------------------------------------------------------------------------
# The 12 actions
# --------------------------------------------------------------------------------------------


def _failure(
    engine: FaultEngine,
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
        _error_result(body, engine.label, clean),
        delay_s=delay_s,
        note=f"{what} as is_error result",
    )


def _delay(engine: FaultEngine, plan: CallPlan, clean: dict[str, Any] | None) -> FaultEffect:
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


def _server_error(engine: FaultEngine, plan: CallPlan, clean: dict[str, Any] | None) -> FaultEffect:
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
    )


def _forbidden(engine: FaultEngine, plan: CallPlan, clean: dict[str, Any] | None) -> FaultEffect:
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


def _replaced(engine: FaultEngine, clean: dict[str, Any] | None) -> FaultEffect | None:
    """The scenario's ``response`` replacement, when it gives one (A4, B1, B2)."""
    if "response" not in engine.params:
        return None
    result = _response_result(engine.params["response"], engine.label, clean)
    return FaultEffect(True, result, note="response replaced")


def _alter_schema(engine: FaultEngine, plan: CallPlan, clean: dict[str, Any] | None) -> FaultEffect:
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


def _patch(engine: FaultEngine, plan: CallPlan, clean: dict[str, Any] | None) -> FaultEffect:
    """B1 and B2: overwrite fields (old values / values contradicting another tool)."""
    if (replaced := _replaced(engine, clean)) is not None:
        return replaced
    assert clean is not None
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


def _irrelevant(engine: FaultEngine, plan: CallPlan, clean: dict[str, Any] | None) -> FaultEffect:
    result = _response_result(engine.params["response"], engine.label, clean)
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


def _empty(engine: FaultEngine, plan: CallPlan, clean: dict[str, Any] | None) -> FaultEffect:
    assert clean is not None
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
            if block.get("type") == "text" and _parse_json_text(block.get("text", "")) is None:
                block["text"] = ""
    return FaultEffect(True, label_result(result, engine.label), note=f"emptied ({mode})")


def _injection(default_placement: str, text_param: str) -> Action:
    def action(engine: FaultEngine, plan: CallPlan, clean: dict[str, Any] | None) -> FaultEffect:
        assert clean is not None
        p = engine.params
        planted, note = _plant(
            clean, p[text_param], p.get("placement", default_placement), p.get("pointer")
        )
        return FaultEffect(True, label_result(planted, engine.label), note=note)

    return action


def _listing_only(engine: FaultEngine, plan: CallPlan, clean: dict[str, Any] | None) -> FaultEffect:
    return FaultEffect(False, clean, note="fault lives in tools/list")


_ACTIONS: Final[dict[str, Action]] = {
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
