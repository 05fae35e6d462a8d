"""Retry with backoff: timeouts, 5xx-class and rate-limit failures, inside a total deadline; never a
permission denial or invalid arguments.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable
from typing import Any

from mcp.types import CallToolResult

from toolwatch.injection.mitigations.failures import classify_failure, retry_after_seconds
from toolwatch.injection.mitigations.results import result_text
from toolwatch.injection.mitigations.wrapper import EventSink, Mitigation, Send, try_call


class RetryWithBackoff(Mitigation):
    """Retry transient failures (timeouts, 5xx, 429) with exponential backoff and jitter.

    ``deadline`` bounds the whole call including retries: each attempt's read timeout is cut
    to what is left, and no retry is started whose backoff would end past the deadline.
    Permission denials, invalid arguments and unknown tools are returned at once — repeating
    them cannot succeed and looks like the runaway loops detection is meant to catch.
    """

    name = "retry"

    def __init__(
        self,
        inner: Any,
        *,
        attempts: int = 3,
        base_delay: float = 0.05,
        factor: float = 2.0,
        max_delay: float = 2.0,
        deadline: float = 10.0,
        jitter: float = 0.2,
        seed: int = 0,
        sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
        clock: Callable[[], float] = time.monotonic,
        on_event: EventSink | None = None,
    ) -> None:
        super().__init__(inner, on_event=on_event)
        if attempts < 1:
            raise ValueError("attempts must be >= 1")
        self.attempts = attempts
        self.base_delay = base_delay
        self.factor = factor
        self.max_delay = max_delay
        self.deadline = deadline
        self.jitter = jitter
        self._rng = random.Random(seed)
        self._sleep = sleep
        self._clock = clock

    def backoff(self, attempt: int) -> float:
        """Delay before retry number ``attempt`` (1-based)."""
        delay = min(self.max_delay, self.base_delay * self.factor ** (attempt - 1))
        return delay * (1.0 + self.jitter * self._rng.random())

    async def handle(
        self, name: str, arguments: dict[str, Any], timeout: float | None, send: Send
    ) -> CallToolResult:
        end = self._clock() + self.deadline
        result: CallToolResult | None = None
        error: BaseException | None = None
        for attempt in range(1, self.attempts + 1):
            remaining = end - self._clock()
            cut = remaining if timeout is None else min(timeout, remaining)
            result, error = await try_call(send, max(cut, 0.001))
            failure = classify_failure(result, error)
            if failure is None:
                if attempt > 1:
                    self._emit("recovered", name, f"attempt {attempt}")
                assert result is not None
                return result
            if not failure.retryable:
                if attempt == 1:
                    self._emit("not_retried", name, failure.value)
                break
            if attempt == self.attempts:
                self._emit("exhausted", name, failure.value)
                break
            delay = self.backoff(attempt)
            hint = retry_after_seconds(result_text(result)) if result is not None else None
            if hint is not None:
                delay = max(delay, hint)
            if self._clock() + delay >= end:
                self._emit("deadline", name, failure.value)
                break
            self._emit("retry", name, f"{failure.value}; attempt {attempt + 1} in {delay:.3f}s")
            await self._sleep(delay)
        if error is not None:
            raise error
        assert result is not None
        return result
