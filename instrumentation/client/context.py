"""Which conversation, agent and model response the next tool call belongs to.

The agent loop declares them with :func:`conversation` and :func:`model_response`; both are
context managers over :mod:`contextvars`, so they follow ``async`` tasks (each task sees the
values current where it was created) and never leak between concurrent conversations.

Fallbacks when nothing is declared (also in the package docstring and ARCHITECTURE.md):

* conversation: one id per process, ``proc-<32 hex>`` (new after ``fork``), numbered in call
  order — a process that runs several conversations must declare them;
* response: each call is its own response, ``auto-<span id>`` — parallel calls then look like
  separate responses, so declare responses to keep same-response bursts from scoring;
* agent: ``None`` (the main agent).

Only the standard library is used here, so importing it costs nothing.
"""

from __future__ import annotations

import itertools
import os
import threading
import uuid
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field

#: Prefix of every response id toolwatch makes up (never a provider's id).
SYNTHETIC_RESPONSE_PREFIX = "auto-"
#: Prefix of the per-process fallback conversation id.
PROCESS_CONVERSATION_PREFIX = "proc-"
#: Conversations whose position counters are remembered (least recently used are dropped;
#: re-entering a dropped conversation restarts its numbering at 0).
MAX_REMEMBERED_CONVERSATIONS = 65_536


@dataclass(slots=True)
class _Conversation:
    conversation_id: str
    agent_id: str | None
    positions: Iterator[int] = field(default_factory=itertools.count)


@dataclass(frozen=True, slots=True)
class _Response:
    response_id: str
    agent_id: str | None


#: What a call is attributed to, resolved once when it starts: (conversation id, agent id,
#: response id or None when none is declared — the caller synthesises one —, position or None
#: for spans that are not calls). A plain tuple: building it costs no Python-level call.
CallContext = tuple[str, str | None, str | None, int | None]


_CONVERSATION: ContextVar[_Conversation | None] = ContextVar("toolwatch_conversation", default=None)
_RESPONSE: ContextVar[_Response | None] = ContextVar("toolwatch_response", default=None)

_lock = threading.Lock()
_counters: OrderedDict[str, Iterator[int]] = OrderedDict()
_process_conversation: _Conversation | None = None


def _counter_for(conversation_id: str) -> Iterator[int]:
    """The position counter of a conversation, shared by every block that enters it."""
    with _lock:
        counter = _counters.get(conversation_id)
        if counter is None:
            counter = itertools.count()
            _counters[conversation_id] = counter
            if len(_counters) > MAX_REMEMBERED_CONVERSATIONS:
                _counters.popitem(last=False)
        else:
            _counters.move_to_end(conversation_id)
        return counter


def _process_fallback() -> _Conversation:
    global _process_conversation
    conv = _process_conversation
    if conv is None:
        with _lock:
            if _process_conversation is None:
                _process_conversation = _Conversation(
                    PROCESS_CONVERSATION_PREFIX + uuid.uuid4().hex, None
                )
            conv = _process_conversation
    return conv


def _forget_process_conversation() -> None:
    global _process_conversation
    _process_conversation = None


if hasattr(os, "register_at_fork"):  # a forked worker is a different conversation
    os.register_at_fork(after_in_child=_forget_process_conversation)


def _check_id(value: str, what: str) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError(f"{what} must be a non-empty string, got {value!r}")
    return value


@contextmanager
def conversation(conversation_id: str, agent_id: str | None = None) -> Iterator[str]:
    """Attribute the tool calls made inside the block to ``conversation_id``.

    ``agent_id`` names a subagent (``None`` = the main agent). Positions
    (``toolwatch.session.position``) count from 0 per conversation and continue when the same
    conversation is entered again. Yields the conversation id.
    """
    _check_id(conversation_id, "conversation_id")
    if agent_id is not None:
        _check_id(agent_id, "agent_id")
    token = _CONVERSATION.set(
        _Conversation(conversation_id, agent_id, _counter_for(conversation_id))
    )
    try:
        yield conversation_id
    finally:
        _CONVERSATION.reset(token)


@contextmanager
def model_response(
    response_id: str | None = None,
    *,
    conversation_id: str | None = None,
    agent_id: str | None = None,
) -> Iterator[str]:
    """Declare that the tool calls made inside the block were issued by one model response.

    ``response_id`` is the provider's id (e.g. ``msg_...``); when ``None`` a synthetic
    ``auto-<hex>`` id shared by the block's calls is made up. ``conversation_id`` also enters
    that conversation (as :func:`conversation` does); ``agent_id`` overrides the
    conversation's agent for this block. Yields the response id.
    """
    rid = (
        SYNTHETIC_RESPONSE_PREFIX + uuid.uuid4().hex[:16]
        if response_id is None
        else _check_id(response_id, "response_id")
    )
    if agent_id is not None:
        _check_id(agent_id, "agent_id")
    conv_token = None
    if conversation_id is not None:
        _check_id(conversation_id, "conversation_id")
        conv_token = _CONVERSATION.set(
            _Conversation(conversation_id, agent_id, _counter_for(conversation_id))
        )
    token = _RESPONSE.set(_Response(rid, agent_id))
    try:
        yield rid
    finally:
        _RESPONSE.reset(token)
        if conv_token is not None:
            _CONVERSATION.reset(conv_token)


def resolve(*, take_position: bool) -> CallContext:
    """The conversation, agent, response and (if asked) next position for a call starting now."""
    conv = _CONVERSATION.get() or _process_fallback()
    resp = _RESPONSE.get()
    position = next(conv.positions) if take_position else None
    if resp is None:
        return conv.conversation_id, conv.agent_id, None, position
    agent = conv.agent_id if resp.agent_id is None else resp.agent_id
    return conv.conversation_id, agent, resp.response_id, position


def process_conversation_id() -> str:
    """The fallback conversation id of this process (made on first use)."""
    return _process_fallback().conversation_id
