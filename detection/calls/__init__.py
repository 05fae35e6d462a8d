"""The calls a detector reads: the columnar frame of call records in stream order
(:class:`CallFrame`) and the time windows of the store that train, calibrate or get scored.

The names below load on first use (:mod:`toolwatch.lazy`): ``split_options`` (the split's
options) needs neither numpy nor Arrow."""

from __future__ import annotations

from typing import TYPE_CHECKING

from toolwatch.lazy import lazy_names

if TYPE_CHECKING:
    from toolwatch.detection.calls.frame import CallFrame, CallsError, prepare
    from toolwatch.detection.calls.windows import (
        Window,
        WindowError,
        default_windows,
        load_window,
    )

__all__ = [
    "CallFrame",
    "CallsError",
    "Window",
    "WindowError",
    "default_windows",
    "load_window",
    "prepare",
]
__getattr__ = lazy_names(
    __name__,
    {
        "CallFrame": "toolwatch.detection.calls.frame",
        "CallsError": "toolwatch.detection.calls.frame",
        "Window": "toolwatch.detection.calls.windows",
        "WindowError": "toolwatch.detection.calls.windows",
        "default_windows": "toolwatch.detection.calls.windows",
        "load_window": "toolwatch.detection.calls.windows",
        "prepare": "toolwatch.detection.calls.frame",
    },
)
