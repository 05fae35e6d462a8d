"""Small pure edits of wire-form results (dicts as sent): labelling, error results, JSON documents
inside text blocks, key renames, planting a value at a pointer.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from toolwatch.conventions import (
    LABEL_META_KEY,
)
from toolwatch.documents import loads_json
from toolwatch.injection.faults.pointer import pointer_join, resolve_pointer, set_pointer


def label_result(result: Mapping[str, Any], label: str) -> dict[str, Any]:
    """A copy of ``result`` carrying ``label`` under ``_meta["toolwatch/label"]``."""
    out = copy.deepcopy(dict(result))
    meta = dict(out.get("_meta") or {})
    meta[LABEL_META_KEY] = label
    out["_meta"] = meta
    return out


def error_result(body: Any, label: str, base: Mapping[str, Any] | None) -> dict[str, Any]:
    text = body if isinstance(body, str) else json.dumps(body, ensure_ascii=False)
    meta = dict((base or {}).get("_meta") or {})
    meta[LABEL_META_KEY] = label
    return {"_meta": meta, "content": [{"type": "text", "text": text}], "isError": True}


def response_result(spec: Mapping[str, Any], label: str, base: Mapping[str, Any] | None) -> dict:
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


def parse_json_text(text: str) -> Any:
    stripped = text.lstrip()
    if not stripped.startswith(("{", "[")):
        return None
    try:
        return loads_json(text)
    except ValueError:
        return None


def edit_json(
    result: Mapping[str, Any], edit: Callable[[Any], bool]
) -> tuple[dict[str, Any], bool]:
    """Apply ``edit`` (mutates a JSON doc, returns whether it changed it) to the result's
    structured content and to every text block that holds JSON, keeping the two in step."""
    out = copy.deepcopy(dict(result))
    changed = False
    rewritten: dict[str, str] = {}
    if isinstance(out.get("structuredContent"), dict):
        before = copy.deepcopy(out["structuredContent"])
        changed |= edit(out["structuredContent"])
        rewritten = _rewritten_strings(before, out["structuredContent"])
    for block in out.get("content") or []:
        if block.get("type") != "text":
            continue
        doc = parse_json_text(block.get("text", ""))
        if doc is None:
            # A plain text that is a structured string (the Python SDK's tool returning
            # ``str`` sends it as text and as ``{"result": text}``): edited alike, or a
            # model reading the text would never see the fault the structured copy carries.
            if block.get("text") in rewritten:
                block["text"] = rewritten[block["text"]]
            continue
        if edit(doc):
            changed = True
            block["text"] = dump_like(block["text"], doc)
    return out, changed


def _rewritten_strings(before: Any, after: Any) -> dict[str, str]:
    """Old string -> new string for every string ``edit`` changed in place (same path)."""
    if isinstance(before, str) and isinstance(after, str):
        return {before: after} if before != after else {}
    pairs: list[tuple[Any, Any]] = []
    if isinstance(before, dict) and isinstance(after, dict):
        pairs = [(v, after[k]) for k, v in before.items() if k in after]
    elif isinstance(before, list) and isinstance(after, list):
        pairs = list(zip(before, after, strict=False))
    out: dict[str, str] = {}
    for old, new in pairs:
        out.update(_rewritten_strings(old, new))
    return out


#: How servers write JSON text: Python's ``json.dumps`` (``", "`` / ``": "``), JavaScript's
#: ``JSON.stringify`` (compact), and either indented; with non-ASCII escaped or kept.
_STYLES: tuple[dict[str, Any], ...] = tuple(
    {"indent": indent, "separators": separators, "ensure_ascii": ascii_only}
    for ascii_only in (False, True)
    for indent, separators in (
        (None, (", ", ": ")),
        (None, (",", ":")),
        (2, (",", ": ")),
        (4, (",", ": ")),
    )
)


def dump_like(text: str, doc: Any) -> str:
    """``doc`` (an edited copy of the JSON in ``text``) written as ``text`` was written, so an
    edit changes only what it edits: re-written in Python's style, a Node server's compact
    JSON grew by two bytes a key, a size change the fault did not make. A text no style
    reproduces (other spacing, key order) gets Python's style, indented when multi-line."""
    stripped = text.strip()
    head, tail = text[: len(text) - len(text.lstrip())], text[len(text.rstrip()) :]
    original = parse_json_text(stripped)
    style = next(
        (s for s in _STYLES if json.dumps(original, **s) == stripped),
        {"ensure_ascii": False, "indent": 2 if "\n" in stripped else None},
    )
    return head + json.dumps(doc, **style) + tail


def _json_doc(result: Mapping[str, Any]) -> Any:
    """The result's JSON: structured content, else the first text block that parses."""
    if isinstance(result.get("structuredContent"), dict):
        return result["structuredContent"]
    for block in result.get("content") or []:
        if block.get("type") == "text":
            doc = parse_json_text(block.get("text", ""))
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


def plant(
    result: Mapping[str, Any], text: str, placement: str, pointer: str | None
) -> tuple[dict[str, Any], str]:
    """Put ``text`` into a result: as a first/last text block, inside the document body, or
    beside it (``beside_document``: an object document becomes ``{"original_content": <it>,
    "injected_claim": text}``, what AgentCheck's C3 injector returns when the result has no
    text field to plant in)."""
    out = copy.deepcopy(dict(result))
    block = {"type": "text", "text": text}
    if placement == "beside_document" and isinstance(_json_doc(out), dict):

        def wrap(d: Any) -> bool:
            if not isinstance(d, dict):
                return False
            original = dict(d)
            d.clear()
            d.update({"original_content": original, "injected_claim": text})
            return True

        wrapped, changed = edit_json(out, wrap)
        if changed:
            return wrapped, "document wrapped beside the text"
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


def tool_in(tools: Sequence[Mapping[str, Any]], name: str) -> Mapping[str, Any] | None:
    return next((t for t in tools if t.get("name") == name), None)
