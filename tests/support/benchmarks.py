"""The benchmark scripts as modules, for tests of their measurement functions (``benchmarks/``
is a folder of scripts, not a package)."""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType

from support.paths import REPO


def load_benchmark(name: str) -> ModuleType:
    """``benchmarks/<name>.py``, imported (and registered under its name, as a dataclass of the
    module and the scripts' own ``from targets import …`` need)."""
    spec = importlib.util.spec_from_file_location(name, REPO / "benchmarks" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
