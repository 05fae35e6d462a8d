"""Whether a cancelled call ran out of time: a deadline's cancel is ``timeout``, any other
cancel ``cancelled``.

A deadline around ``call_tool`` (``anyio.fail_after`` / ``move_on_after``, ``asyncio.timeout``,
``asyncio.wait_for``) reaches the call as a plain cancel, and the call's span ends before the
deadline's scope turns it into ``TimeoutError`` (or swallows it). So the class is read where
the call sees the cancel, from what the deadline itself left behind:

* anyio's scopes (asyncio backend, anyio >= 4.11) cancel with their reason, and a deadline's
  is ``deadline exceeded`` (:data:`ANYIO_DEADLINE`); a task group's or an explicit
  ``scope.cancel()`` is not;
* ``asyncio.timeout`` (and ``asyncio.wait_for`` from Python 3.12, built on it) cancels its task
  from ``Timeout._on_timeout``, observed here: while that Timeout has fired and not yet exited,
  the task's cancel is the deadline's;
* ``asyncio.wait_for`` on Python 3.11 runs the call in a task of its own and cancels it through
  ``asyncio.tasks._cancel_and_wait``, observed here: a deadline when wait_for itself is not
  being cancelled (then the cancel is the agent's, passed on).

The two asyncio internals are hooks like the SDK's (``sdk_hooks.PRIVATE_HOOKS``): observed,
never changed, and a Python that moves one is a WARNING at ``instrument()`` (its deadlines are
then ``cancelled``) and a failing test. Exception messages are compared here, never exported.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any, Final
from weakref import WeakKeyDictionary, WeakSet

log = logging.getLogger(__name__)

#: how anyio ends the message of the cancel a scope's deadline sends (``CancelScope._timeout``)
ANYIO_DEADLINE: Final = "; reason: deadline exceeded"
#: ``asyncio.timeouts._State.EXPIRING``: a Timeout that has fired and not yet exited
_EXPIRING: Final = getattr(getattr(asyncio.timeouts, "_State", None), "EXPIRING", None)

#: per task, the last asyncio Timeout that fired on it
_FIRED: WeakKeyDictionary[asyncio.Task[Any], Any] = WeakKeyDictionary()
#: tasks asyncio.wait_for (Python 3.11) cancelled because its timeout passed
_TIMED_OUT: WeakSet[asyncio.Task[Any]] = WeakSet()


def deadline_cancelled(exc: BaseException) -> bool:
    """True when the cancel ``exc`` that ended a call came from a deadline (read in the
    cancelled task, where the call sees it); False for any other cancel or outside asyncio."""
    reason = exc.args[0] if exc.args else None
    if isinstance(reason, str) and reason.endswith(ANYIO_DEADLINE):
        return True
    try:
        task = asyncio.current_task()
    except RuntimeError:  # no asyncio loop running (trio, or no loop at all)
        return False
    if task is None:
        return False
    if task in _TIMED_OUT:
        return True
    fired = _FIRED.get(task)
    return _EXPIRING is not None and getattr(fired, "_state", None) is _EXPIRING


def observe_timeout(
    wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """``asyncio.timeouts.Timeout._on_timeout``: note the task the Timeout is cancelling."""
    result = wrapped(*args, **kwargs)
    try:
        task = instance._task
        if task is not None:
            _FIRED[task] = instance
    except Exception:
        log.debug("toolwatch: could not note an asyncio timeout", exc_info=True)
    return result


def observe_wait_for_cancel(
    wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """``asyncio.tasks._cancel_and_wait(fut)``, which wait_for calls on its timeout or on being
    cancelled itself: note ``fut`` as timed out when wait_for's own task is not cancelled."""
    fut = args[0] if args else kwargs.get("fut")
    try:
        waiting = asyncio.current_task()
        if isinstance(fut, asyncio.Task) and waiting is not None and not waiting.cancelling():
            _TIMED_OUT.add(fut)
    except Exception:
        log.debug("toolwatch: could not note an asyncio.wait_for timeout", exc_info=True)
    return wrapped(*args, **kwargs)
