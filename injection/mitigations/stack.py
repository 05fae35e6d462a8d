"""Stacking mitigations by name, in a fixed order (retry, schema, scan, verify)."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from toolwatch.injection.mitigations.retry import RetryWithBackoff
from toolwatch.injection.mitigations.scan import InjectionScanner
from toolwatch.injection.mitigations.schema import SchemaValidation
from toolwatch.injection.mitigations.verify import OutputVerifier
from toolwatch.injection.mitigations.wrapper import EventSink, Mitigation
from toolwatch.words import noun_for

MITIGATION_NAMES: Final[tuple[str, ...]] = ("retry", "schema", "scan", "verify")


#: Wrapping order, innermost first: retry sees raw failures, the scanner sees every payload
#: before anything else can copy it, the verifier sees only what survived the scanner.
_ORDER: Final[tuple[str, ...]] = ("retry", "schema", "scan", "verify")


def parse_mitigations(spec: str | Sequence[str] | None) -> tuple[str, ...]:
    """Normalise ``"retry,scan"`` / ``"retry+scan"`` / ``["retry"]`` / ``"all"`` / ``"none"``
    to wrapping order."""
    if spec is None:
        return ()
    raw = re.split(r"[,+]", spec) if isinstance(spec, str) else list(spec)
    items = [s.strip().lower() for s in raw]
    items = [s for s in items if s]
    if items in (["none"], []):
        return ()
    if "all" in items:
        return _ORDER
    unknown = [s for s in items if s not in _ORDER]
    if unknown:
        raise ValueError(
            f"unknown {noun_for(len(unknown), 'mitigation')} {', '.join(unknown)}; "
            f"choose from {', '.join(_ORDER)} or all"
        )
    return tuple(m for m in _ORDER if m in items)


def apply_mitigations(
    client: Any,
    names: str | Sequence[str] | None,
    *,
    on_event: EventSink | None = None,
    seed: int = 0,
    options: Mapping[str, Mapping[str, Any]] | None = None,
) -> Any:
    """Wrap ``client`` in the named mitigations (in the fixed order); options per name."""
    options = options or {}
    wrapped = client
    classes: dict[str, Callable[..., Mitigation]] = {
        "retry": lambda inner, **kw: RetryWithBackoff(inner, seed=seed, **kw),
        "schema": SchemaValidation,
        "scan": InjectionScanner,
        "verify": OutputVerifier,
    }
    for name in parse_mitigations(names):
        wrapped = classes[name](wrapped, on_event=on_event, **dict(options.get(name, {})))
    return wrapped
