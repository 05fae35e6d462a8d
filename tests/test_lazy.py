"""Every package whose names load on first use (:mod:`toolwatch.lazy`) gives each name of its
``__all__`` from the module its map names: a wrong module or a name missing there would
otherwise show only when a command first reads it, at run time."""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path

import pytest

import toolwatch
from toolwatch.lazy import lazy_names

ROOT = Path(toolwatch.__file__).resolve().parent


def _lazy_packages() -> list[str]:
    """The toolwatch packages whose ``__init__`` sets ``__getattr__`` with ``lazy_names``."""
    found = []
    for info in pkgutil.walk_packages([str(ROOT)], prefix="toolwatch."):
        init = ROOT.joinpath(*info.name.split(".")[1:], "__init__.py")
        if info.ispkg and init.is_file() and "lazy_names(" in init.read_text(encoding="utf-8"):
            found.append(info.name)
    return found


LAZY = _lazy_packages()


def test_the_lazy_packages_are_found() -> None:
    assert {"toolwatch.collector.store", "toolwatch.detection.cues"} <= set(LAZY), LAZY


@pytest.mark.parametrize("package", LAZY)
def test_every_public_name_of_a_lazy_package_loads(package: str) -> None:
    module = importlib.import_module(package)
    names = getattr(module, "__all__", [])
    assert names, f"{package} sets no __all__"
    for name in names:
        assert getattr(module, name) is not None, f"{package}.{name}"


def test_an_unknown_name_is_an_attribute_error_naming_it() -> None:
    get = lazy_names("toolwatch.example", {"known": "toolwatch.words"})
    with pytest.raises(AttributeError, match=r"'toolwatch\.example' has no attribute 'nope'"):
        get("nope")
