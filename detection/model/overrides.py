"""``--model-config KEY=VALUE`` as normal-model overrides (``toolwatch train``, ``experiment``
and ``replay`` share it). A bad one is bad usage (exit 2) in each, found before any work
starts."""

from __future__ import annotations

import argparse
import json
from typing import Any

from toolwatch.detection.model.location import ModelError
from toolwatch.usage import UsageError


def add_model_config_argument(parser: argparse.ArgumentParser) -> None:
    """The repeatable ``--model-config KEY=VALUE`` option (read with :func:`model_overrides`)."""
    parser.add_argument(
        "--model-config",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a normal-model knob (repeatable), e.g. the named variants "
        "order_smoothing=kneser_ney|witten_bell_novel, all_restandardised=true, "
        "ewma_start=first, time_tail=floor, provenance_rule=learned_max, novelty_key=server, "
        "novelty_alert=cusum (docs/ARCHITECTURE.md: their measured effect)",
    )


def model_overrides(items: list[str]) -> dict[str, Any]:
    """``KEY=VALUE`` pairs (``--model-config``) as ModelConfig overrides: JSON values, bare
    words as strings; checked by building the config."""
    # imported here: the option's --help needs no cues (numpy)
    from toolwatch.detection.model.config import ModelConfig

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
