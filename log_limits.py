"""Rate-limited log lines: a peer can repeat what makes the product log (a bad line, a refused
request), so each kind of line is said at most once per interval, then how many were held
back. Standard library only: the production install (the proxy, instrumentation) uses it too.
"""

from __future__ import annotations

import logging
import time
from typing import Any


class Window:
    """One line per key per ``interval`` seconds, and how many were held back since the last."""

    def __init__(self, interval: float) -> None:
        self.interval = interval
        self._last: dict[Any, tuple[float, int]] = {}

    def admit(self, key: Any) -> str | None:
        """``None`` to hold this line back, else the suffix to add to it (maybe empty)."""
        now = time.monotonic()
        last, suppressed = self._last.get(key, (float("-inf"), 0))
        if now - last < self.interval:
            self._last[key] = (last, suppressed + 1)
            return None
        if len(self._last) > 1024:  # keys are few kinds; never let them grow without bound
            self._last.clear()
        self._last[key] = (now, 0)
        return f" ({suppressed} more like it in the last {self.interval:g} s)" if suppressed else ""


class RateLimiter:
    """At most one log line per key per ``interval`` seconds, then how many were suppressed."""

    def __init__(self, logger: logging.Logger, interval: float = 10.0) -> None:
        self.logger = logger
        self._window = Window(interval)

    def log(self, level: int, key: str, message: str, *args: Any, **kwargs: Any) -> None:
        suffix = self._window.admit(key)
        if suffix is not None:
            self.logger.log(level, message + suffix, *args, **kwargs)
