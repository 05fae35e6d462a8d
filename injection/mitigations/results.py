"""Reading and writing MCP tool results without keeping their content: text, JSON data, leaves,
flags and the annotation blocks mitigations add.

Shared by the mitigations, the reference agents and the checks.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Final

from mcp.types import CallToolResult, TextContent

from toolwatch.documents import loads_json
from toolwatch.injection.mitigations.keys import is_metadata_key

#: ``result.meta`` key holding the list of flags added by mitigations.
FLAGS_META_KEY: Final = "toolwatch/flags"
#: ``TextContent.meta`` key marking a block written by a mitigation (not by the tool).
ANNOTATION_META_KEY: Final = "toolwatch/annotation"


def is_annotation(block: Any) -> bool:
    meta = getattr(block, "meta", None) or {}
    return ANNOTATION_META_KEY in meta


def result_text(result: CallToolResult, *, annotations: bool = False) -> str:
    """The result's text blocks joined by newlines (tool text only unless ``annotations``)."""
    parts = [
        b.text
        for b in result.content
        if isinstance(b, TextContent) and (annotations or not is_annotation(b))
    ]
    return "\n".join(parts)


def annotation_texts(result: CallToolResult) -> list[str]:
    """Text of the blocks added by mitigations."""
    return [b.text for b in result.content if isinstance(b, TextContent) and is_annotation(b)]


def result_data(result: CallToolResult) -> Any:
    """The result as data: structured content, else the first text block that is JSON, else
    the text (a prepended note does not hide the JSON document after it)."""
    if result.structured_content is not None:
        return result.structured_content
    blocks = [b.text for b in result.content if isinstance(b, TextContent) and not is_annotation(b)]
    for text in [*blocks, "\n".join(blocks)] if len(blocks) > 1 else blocks:
        stripped = text.strip()
        if stripped[:1] in ("{", "[") or stripped in ("null", "true", "false"):
            try:
                return loads_json(stripped)
            except ValueError:
                continue
    return "\n".join(blocks)


def result_flags(result: CallToolResult) -> list[dict[str, str]]:
    meta = result.meta or {}
    flags = meta.get(FLAGS_META_KEY) or []
    return [dict(f) for f in flags if isinstance(f, Mapping)]


def iter_leaves(
    value: Any, path: tuple[str | int, ...] = ()
) -> Iterator[tuple[tuple[Any, ...], Any]]:
    """(path, scalar) pairs of a JSON value, depth first in document order."""
    if isinstance(value, Mapping):
        for k, v in value.items():
            yield from iter_leaves(v, (*path, str(k)))
    elif isinstance(value, list | tuple):
        for i, v in enumerate(value):
            yield from iter_leaves(v, (*path, i))
    else:
        yield path, value


def iter_strings(value: Any) -> Iterator[str]:
    for _, leaf in iter_leaves(value):
        if isinstance(leaf, str):
            yield leaf


def is_empty_value(value: Any) -> bool:
    """True for null, "", [] and {}, and for objects whose collections are all empty and
    whose other fields only describe the response.

    ``{"repo": "acme/payments", "matches": [], "total": 0}`` is empty: identifiers, dates and
    counts beside an empty list are the request echoed back, not results, and so is a status
    that only says the request went through (``{"results": [], "status": "ok"}``).
    ``{"status": "passing", "failed_jobs": []}`` is not: the status is the answer. An object without
    collections is empty only when all its values are null or blank.
    """
    if value is None:
        return True
    if isinstance(value, str):
        return value.strip() == ""
    if isinstance(value, list | tuple):
        return len(value) == 0
    if isinstance(value, Mapping):
        if not value:
            return True
        collections = [v for v in value.values() if isinstance(v, list | tuple | Mapping)]
        if collections:
            return all(is_empty_value(v) for v in collections) and all(
                is_metadata_key(str(k)) or v is None or v == "" or _generic_status(str(k), v)
                for k, v in value.items()
                if not isinstance(v, list | tuple | Mapping)
            )
        return all(v is None or v == "" for v in value.values())
    return False


#: Values of a status field that only say the request went through ("ok"), not what it found.
_GENERIC_STATUS: Final = frozenset({"ok", "success", "succeeded", "200", "done", "completed"})


def _generic_status(key: str, value: Any) -> bool:
    if key.lower() not in ("status", "ok", "success", "result_status", "code"):
        return False
    return value is True or str(value).strip().lower() in _GENERIC_STATUS


def is_empty_result(result: CallToolResult) -> bool:
    """A successful result that carries nothing: no blocks, blank text, or an empty JSON shape."""
    if result.is_error:
        return False
    if not result.content and result.structured_content is None:
        return True
    return is_empty_value(result_data(result))


def make_result(
    text: str,
    *,
    is_error: bool,
    flags: Sequence[Mapping[str, str]] = (),
) -> CallToolResult:
    meta = {FLAGS_META_KEY: [dict(f) for f in flags]} if flags else None
    return CallToolResult(
        content=[TextContent(type="text", text=text)], is_error=is_error, _meta=meta
    )


def annotate(
    result: CallToolResult, mitigation: str, flag: str, message: str, detail: str = ""
) -> CallToolResult:
    """A copy of ``result`` with a marked warning block and a machine-readable flag added."""
    meta = dict(result.meta or {})
    flags = [
        *list(meta.get(FLAGS_META_KEY) or []),
        {"mitigation": mitigation, "flag": flag, "detail": detail},
    ]
    meta[FLAGS_META_KEY] = flags
    block = TextContent(
        type="text",
        text=f"[toolwatch {mitigation}] {message}",
        _meta={ANNOTATION_META_KEY: mitigation},
    )
    return result.model_copy(update={"content": [*result.content, block], "meta": meta})
