"""JSON pointers (RFC 6901): parse, join, resolve and set — how a scenario names a field of a
response or an argument.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

# --------------------------------------------------------------------------------------------
# JSON pointers (RFC 6901): fault params and checks address fields inside responses with them
# --------------------------------------------------------------------------------------------


def pointer_parts(pointer: str) -> list[str]:
    if pointer == "":
        return []
    if not pointer.startswith("/"):
        raise ValueError(f"JSON pointer must start with '/': {pointer!r}")
    return [p.replace("~1", "/").replace("~0", "~") for p in pointer[1:].split("/")]


def pointer_join(parts: Iterable[Any]) -> str:
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)


def resolve_pointer(doc: Any, pointer: str) -> Any:
    """The value at ``pointer`` in ``doc``; ``KeyError`` naming the pointer when absent."""
    node = doc
    for part in pointer_parts(pointer):
        if isinstance(node, Mapping) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            raise KeyError(pointer)
    return node


def set_pointer(doc: Any, pointer: str, value: Any) -> None:
    """Replace the existing value at ``pointer`` in place; ``KeyError`` when absent."""
    parts = pointer_parts(pointer)
    if not parts:
        raise KeyError(pointer)
    parent = resolve_pointer(doc, pointer_join(parts[:-1]))
    last = parts[-1]
    if isinstance(parent, dict) and last in parent:
        parent[last] = value
    elif isinstance(parent, list) and last.isdigit() and int(last) < len(parent):
        parent[int(last)] = value
    else:
        raise KeyError(pointer)


def lookup(doc: Any, path: Sequence[Any]) -> tuple[bool, Any]:
    """The value at ``path`` (keys and list indexes) in a JSON document, and whether it is
    there (a stored ``None`` is found; a missing key is not)."""
    node = doc
    for part in path:
        if (isinstance(node, Mapping) and part in node) or (
            isinstance(node, list) and isinstance(part, int) and part < len(node)
        ):
            node = node[part]
        else:
            return False, None
    return True, node
