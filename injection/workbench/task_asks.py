"""What a task asks for, read from its words: an action it requests (``merge``, ``book``), a
tool whose subject it names. The plan calls an acting tool, or sends the task text to the
faulted tool, only on that evidence."""

from __future__ import annotations

import re


def requested(verb: str, task: str) -> bool:
    """The task asks for the action ``verb`` (and does not forbid it)."""
    stem = verb[:5] if len(verb) > 5 else verb
    for m in re.finditer(rf"\b[\w-]*{re.escape(stem)}\w*", task, re.I):
        before = task[max(0, m.start() - 25) : m.start()].lower()
        if re.search(r"\b(?:do not|don't|never|not|no need to|without)\s+(?:\w+\s+)?$", before):
            continue
        return True
    return False


def names_tool(tool: str, verb: str, task: str) -> bool:
    """The task names what ``tool`` is about: a word of its name beyond its verb
    (``get_annual_revenue`` for "the most recent annual revenue"). A scenario may fault a
    tool its task never needs (``border_crossings`` beside "the capital of Mongolia"); no
    agent sends the question itself as that tool's arguments."""
    words = re.split(r"[_\W]+|(?<=[a-z])(?=[A-Z])", tool)
    return any(
        len(w) >= 4 and w.lower() != verb.lower() and requested(w.lower(), task) for w in words
    )
