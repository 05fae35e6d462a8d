"""The calls a detector reads: the columnar frame of call records in stream order
(:class:`CallFrame`) and the time windows of the store that train, calibrate or get scored."""

from toolwatch.detection.calls.frame import CallFrame, CallsError, prepare
from toolwatch.detection.calls.windows import Window, WindowError, default_windows, load_window

__all__ = [
    "CallFrame",
    "CallsError",
    "Window",
    "WindowError",
    "default_windows",
    "load_window",
    "prepare",
]
