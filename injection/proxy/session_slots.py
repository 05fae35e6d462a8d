"""When a streamable-HTTP session slot is likely to free: the ``Retry-After`` of a 503.

The SDK refuses a session past ``max_sessions`` with a bare 503. A slot frees when a client
ends its session (``DELETE``: no one can tell when) or when one idles out: the SDK closes a
session no request has been in flight on for ``session_idle_timeout`` (30 min by default).
A fixed ``Retry-After: 5`` sent clients back 360 times before the first idle session of a
full server could close. :class:`SessionSlots` follows each session's idle clock from the wire
— the session id the SDK answers an opening request with, each request on it, a ``DELETE``
answered, a ``404`` — as the SDK counts it (only requests the SDK serves, so it sits right
around the SDK's app), and a 503 says the seconds until the oldest idle session expires: at
least 1, at most 60 (a client should look again within a minute: a ``DELETE`` may come first).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any, Final

#: Bounds of ``Retry-After`` on the 503 of a full server, in seconds.
RETRY_AFTER_MIN_S: Final = 1
RETRY_AFTER_MAX_S: Final = 60
_SESSION_HEADER: Final = b"mcp-session-id"


class SessionSlots:
    """The open sessions' idle clocks, mirrored from the requests the SDK serves."""

    def __init__(
        self, idle_timeout: float | None, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.idle_timeout = idle_timeout
        self._clock = clock
        self._busy: dict[str, int] = {}  # session → requests in flight on it
        self._idle_since: dict[str, float] = {}  # session → when its last request ended

    def __len__(self) -> int:
        return len(self._busy)

    def __contains__(self, session: object) -> bool:
        return session in self._busy

    def begin(self, session: str) -> None:
        """A request on ``session`` is being served: its idle clock stops."""
        self._busy[session] = self._busy.get(session, 0) + 1
        self._idle_since.pop(session, None)

    def end(self, session: str) -> None:
        """A request on ``session`` ended: its idle clock restarts when none is left."""
        if session not in self._busy:
            return  # forgotten meanwhile (a DELETE, a 404)
        self._busy[session] -= 1
        if not self._busy[session]:
            self._idle_since[session] = self._clock()

    def forget(self, session: str) -> None:
        """``session`` is gone (ended by its client, or unknown to the SDK)."""
        self._busy.pop(session, None)
        self._idle_since.pop(session, None)

    def retry_after(self) -> int:
        """Seconds until a slot is likely to free: the soonest idle expiry (a busy session's
        is a whole timeout away at best), within the bounds."""
        if self.idle_timeout is None:
            return RETRY_AFTER_MAX_S
        now = self._clock()
        for session, since in list(self._idle_since.items()):
            if since + self.idle_timeout <= now:  # expired: the SDK has closed it
                self.forget(session)
        waits = [
            self._idle_since[s] + self.idle_timeout - now if s in self._idle_since else
            self.idle_timeout
            for s in self._busy
        ]  # fmt: skip
        soonest = math.ceil(min(waits, default=RETRY_AFTER_MIN_S))
        return max(RETRY_AFTER_MIN_S, min(RETRY_AFTER_MAX_S, soonest))


def _header(headers: Any, name: bytes) -> str | None:
    for key, value in headers:
        if key.lower() == name:
            return bytes(value).decode("latin-1")
    return None


def with_session_slots(app: Any, slots: SessionSlots, path: str = "/mcp") -> Any:
    """The SDK's ASGI ``app`` with the sessions of its endpoint at ``path`` followed in
    ``slots`` and ``Retry-After`` from them on every 503 it answers (its refusal of a session
    past ``max_sessions``)."""

    async def serve(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope.get("path") != path:
            await app(scope, receive, send)
            return
        session = _header(scope["headers"], _SESSION_HEADER)
        held: list[str] = []  # the session this request holds, once known

        async def sent(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                status = message.get("status", 200)
                headers = [(k, v) for k, v in message.get("headers", []) if k != b"retry-after"]
                if status == 503:
                    headers.append((b"retry-after", str(slots.retry_after()).encode()))
                    message = {**message, "headers": headers}
                kept = session or _header(headers, _SESSION_HEADER)  # or the one it opens
                if status == 404 or (scope["method"] == "DELETE" and status < 300):
                    slots.forget(kept or "")
                elif kept is not None and status < 400 and not held:
                    slots.begin(kept)  # a session the SDK serves: followed from now on
                    held.append(kept)
            await send(message)

        if session is not None and session in slots:
            slots.begin(session)
            held.append(session)
        try:
            await app(scope, receive, sent)
        finally:
            for each in held:
                slots.end(each)

    return serve
