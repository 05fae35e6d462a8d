"""A package's public names loaded on first use (PEP 562), so that importing one light module
of a room (an option's definition, a constant) does not run every module its ``__init__``
re-exports: ``toolwatch CMD --help`` builds its options without DuckDB, Arrow, river or mcp.

Each such ``__init__`` imports its names under ``TYPE_CHECKING`` (for the type checker and the
reader) and sets ``__getattr__ = lazy_names(__name__, {name: module, ...})``. Standard library
only."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_names(package: str, public: Mapping[str, str]) -> Callable[[str], Any]:
    """The module ``__getattr__`` that imports ``public[name]`` when ``name`` is first read."""

    def __getattr__(name: str) -> Any:
        module = public.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(module), name)

    return __getattr__
