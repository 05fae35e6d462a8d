"""``--model-config KEY=VALUE`` as normal-model overrides (``toolwatch train`` and
``toolwatch experiment`` share it). A bad one is bad usage (exit 2) in both, found before any
work starts."""

from __future__ import annotations

import json
from typing import Any

from toolwatch.detection.model.normal_model import ModelConfig, ModelError
from toolwatch.usage import UsageError


def model_overrides(items: list[str]) -> dict[str, Any]:
    """``KEY=VALUE`` pairs (``--model-config``) as ModelConfig overrides: JSON values, bare
    words as strings; checked by building the config."""
    out: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UsageError(f"--model-config {item!r}: use KEY=VALUE")
        try:
            out[key.strip()] = json.loads(value)
        except json.JSONDecodeError:
            out[key.strip()] = value.strip()
    try:
        ModelConfig.from_dict(out)
    except ModelError as exc:
        raise UsageError(f"--model-config: {exc}") from None
    return out
