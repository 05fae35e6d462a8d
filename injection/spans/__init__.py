"""Span injection: labelled anomalies written into the records of normal sessions (BRIEF §3).

A session's calls are column arrays (:mod:`.session_arrays`); :func:`inject` (:mod:`.registry`)
hands one session to the injector of a kind (:mod:`.anomalies`, :mod:`.controls`), which edits
it with the shared rules of :mod:`.editing`, borrowing normal sizes, gaps and tools from the
training split (:class:`InjectionContext`, :mod:`.context`). The nine kinds and their
parameters are in :mod:`.kinds`; what an injector returns or raises in :mod:`.contract`.
"""

from toolwatch.injection.spans.context import InjectionContext
from toolwatch.injection.spans.contract import Injection, InjectionError
from toolwatch.injection.spans.kinds import DEFAULT_PARAMS, KINDS
from toolwatch.injection.spans.registry import draw_position, inject
from toolwatch.injection.spans.session_arrays import SessionCalls

__all__ = [
    "DEFAULT_PARAMS",
    "KINDS",
    "Injection",
    "InjectionContext",
    "InjectionError",
    "SessionCalls",
    "draw_position",
    "inject",
]
