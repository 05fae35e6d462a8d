"""URLs, e-mail addresses and hosts in tool text and arguments: where a call sends data, and whether
a host is allowed.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any
from urllib.parse import urlsplit

from toolwatch.injection.mitigations.results import iter_strings

#: a URL runs to a space, a bracket or a quotation mark of any language ("«https://…»",
#: "“https://…”"): none is a URL's own character unescaped
_URL = re.compile(r"(?:https?://|www\.)[^\s\"'<>)\]}«»“”‘’„‹›「」『』]+", re.I)
_EMAIL = re.compile(r"\b[\w.+-]+@([\w-]+(?:\.[\w-]+)+)\b")
#: the sentence's punctuation after a URL, not part of it ("… https://x.example/in!")
_TRAILING = ".,;:!?…"


def find_urls(text: str) -> list[str]:
    """The URLs written in ``text``, without the punctuation of the sentence around them: a
    host read as "x.example!" would be taken for a stranger's."""
    return [m.group(0).rstrip(_TRAILING) for m in _URL.finditer(text)]


def host_of(url_or_email: str) -> str | None:
    """Lower-case host of a URL (``www.x`` accepted) or of an e-mail address."""
    m = _EMAIL.fullmatch(url_or_email.strip())
    if m:
        return m.group(1).lower()
    u = url_or_email.strip()
    if u.lower().startswith("www."):
        u = "http://" + u
    try:
        host = urlsplit(u).hostname
    except ValueError:
        return None
    return host.lower() if host else None


def hosts_in(value: Any) -> set[str]:
    """Hosts of all URLs and e-mail addresses inside the strings of a JSON value."""
    hosts: set[str] = set()
    for s in iter_strings(value):
        for url in find_urls(s):
            h = host_of(url)
            if h:
                hosts.add(h)
        for m in _EMAIL.finditer(s):
            hosts.add(m.group(1).lower())
    return hosts


def host_allowed(host: str, allowlist: Iterable[str]) -> bool:
    """``host`` equals an allowlisted host or is a subdomain of one."""
    host = host.lower().rstrip(".")
    for allowed in allowlist:
        a = (host_of(allowed) if "/" in allowed or "@" in allowed else allowed) or allowed
        a = a.lower().lstrip("*.").rstrip(".")
        if host == a or host.endswith("." + a):
            return True
    return False
