"""The egress class of a call, decided locally from its tool and arguments, and what it sends.

Classes (:data:`toolwatch.conventions.EGRESS_CLASSES`):

* ``web``: web fetch / search (Claude Code's ``WebFetch`` sends only its ``url``: the prompt
  goes to the model provider, which holds the conversation anyway; ``WebSearch`` its query),
  MCP tools with a fetch/search verb on servers that are not recognisably local (not a search
  of a codebase, of grep matches or of code symbols: those stay on the machine; not a fetch or
  crawl whose every URL argument is loopback), and any other MCP tool given a non-loopback URL;
* ``browser``: browser-automation actions that carry data to a page (navigate, type, fill,
  evaluate, upload …), except towards loopback pages;
* ``http``: MCP tools that send requests or write to remote services (request, api, post,
  send, publish, upload, create …, snake_case or camelCase: ``sendEmail``), except when every
  URL argument is loopback;
* ``shell`` / ``script``: shell commands with network programs / only network-library code
  (:mod:`toolwatch.instrumentation.provenance.shell`);
* ``none``: nothing leaves the machine.

Besides the class, :func:`classify` returns the argument texts that actually leave — the URL
of a fetch, the query of a search, the network segments of a command — so provenance is
measured on what is sent, not on a whole command line that also starts a local server.
These are name heuristics: a tool is known by its name and its server's.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Final

from toolwatch.instrumentation.provenance.shell import LOOPBACK, network_texts
from toolwatch.instrumentation.provenance.text import string_leaves

MCP_PREFIX: Final = "mcp__"
WEB_TOOLS: Final = frozenset({"WebFetch", "WebSearch", "web_fetch", "web_search"})
#: arguments of a built-in web tool that reach the third party
_WEB_SENT_KEYS: Final = {
    "WebFetch": ("url",),
    "WebSearch": ("query", "allowed_domains", "blocked_domains"),
}
SHELL_TOOLS: Final = frozenset(
    {"Bash", "PowerShell", "bash", "shell", "powershell", "zsh", "BashOutput"}
)
_BROWSER_SERVER: Final = re.compile(r"playwright|puppeteer|browser|chrome|selenium|chromium", re.I)
#: a browser-automation tool by its own name, on a server of any name (``puppeteer_evaluate``)
_BROWSER_TOOL: Final = re.compile(r"^(browser|puppeteer|playwright)_", re.I)
#: browser actions whose arguments can carry free-form data to a page or a remote site
_BROWSER_EGRESS: Final = re.compile(
    r"navigate(?!_back|_forward)|goto|open_?url|new_?page|tab_new|(^|_)type$|fill|press_?key|"
    r"evaluate|run_?code|upload|select_?option|(^|_)tabs$",
    re.I,
)
_BROWSER_NAVIGATION: Final = re.compile(
    r"navigate(?!_back|_forward)|goto|open_?url|new_?page|tab_new", re.I
)
_LOCAL_SERVER: Final = re.compile(
    r"filesystem|(^|[_-])fs([_-]|$)|file|memory|(^|[_-])mem([_-]|$)|claude-mem|sqlite|"
    r"(^|[_-])git([_-]|$)|(^|[_-])time([_-]|$)|sequential|mermaid|pencil|(^|[_-])ide([_-]|$)",
    re.I,
)
#: Names of MCP tools that fetch from or search the web. Not ``lookup`` (a key looked up in a
#: table, a user in a directory), ``extract`` (text from a PDF, an archive: a web extractor is
#: named by its service, ``tavily_extract``) nor a fetch of a data store's rows
#: (``fetch_record``): such a tool is web egress only when given a URL, as any MCP tool is.
_WEB_VERB: Final = re.compile(
    r"fetch(?!_?(?:records?|rows?|entry|entries|items?|fields?)(?:$|[_-]))|search|scrape|"
    r"crawl|browse|web(?!_?hook)|url|google|bing|brave|tavily|serper|firecrawl|jina|perplexity|"
    r"library-docs|library-id|query-docs",
    re.I,
)
_HTTP_VERB: Final = re.compile(
    r"http|request|(^|[_-])api([_-]|$)|graphql|webhook|(^|[_-])(post|put|patch|send|publish|"
    r"upload|comment|reply|create|push|email|message|tweet)([_-]|$)|Message$|"
    r"^(?-i:(post|put|patch|send|publish|upload|comment|reply|create|push|email|tweet)[A-Z])",
    re.I,
)
#: Searches that stay on the machine whatever the server: of a codebase, grep matches, an
#: editor's workspace symbols. Not ``search_symbols`` (ticker symbols at a market data API),
#: ``search_files`` (a cloud drive's too; a filesystem server is local by its name) nor
#: ``search_issues`` (a local tracker's or GitHub's: the name does not say).
_LOCAL_SEARCH: Final = re.compile(r"codebase|grep|workspace_?symbols?", re.I)
#: A web tool's name that says it searches: its arguments go to a search service even when
#: they hold a loopback URL (a query about ``http://localhost:3000``).
_SEARCH_VERB: Final = re.compile(
    r"search|google|bing|brave|serper|perplexity|query-docs|library-id", re.I
)
_MCP_SHELL: Final = re.compile(
    r"(^|[_-])(exec(ute)?(_command)?|shell|terminal|run_command|bash|powershell|cmd)([_-]|$)",
    re.I,
)
_URL_ARGUMENT: Final = re.compile(r"^\s*(https?|wss?|ftp)://", re.I)


@dataclass(frozen=True, slots=True)
class ToolName:
    """A tool as provenance reads it: its MCP server (``None`` for a client's built-in tool,
    ``""`` for an MCP server of unknown name) and its bare name."""

    server: str | None
    name: str

    @classmethod
    def of(cls, tool: str, server: str | None) -> ToolName:
        """From a record's ``tool`` and ``server``: ``mcp__<server>__<name>`` (Claude Code's
        spelling) or a bare MCP tool name with its server."""
        if tool.startswith(MCP_PREFIX):
            inner, _, name = tool[len(MCP_PREFIX) :].partition("__")
            return cls(inner if server is None else server, name)
        return cls(server, tool)

    @property
    def builtin(self) -> bool:
        return self.server is None

    @property
    def browser(self) -> bool:
        return self.server is not None and (
            bool(_BROWSER_SERVER.search(self.server)) or bool(_BROWSER_TOOL.match(self.name))
        )


def source_is_remote(tool: ToolName) -> bool:
    """Whether a tool's results come from off the machine (web, search, a browser): bytes
    copied from them are link-following, not a local payload. Shell output counts as local."""
    if tool.builtin:
        return tool.name in WEB_TOOLS
    if tool.browser:
        return True
    return _by_name(tool.server, tool.name)[0] in (_WEB, _WEB_FETCH)


def browser_navigation_local(tool: ToolName, arguments: Any) -> bool | None:
    """For a browser navigation: whether it goes to a loopback page (``None``: not one, or
    no URL given)."""
    if not _by_name(tool.server, tool.name)[1]:
        return None
    return _all_urls_loopback(arguments) if _has_url(arguments) else None


#: What a tool's name (and its server's) decides before its arguments are looked at, one
#: value per branch of :func:`classify`.
_NONE, _WEB_BUILTIN, _SHELL, _BROWSER, _WEB, _WEB_FETCH, _HTTP, _URL = range(8)


@lru_cache(maxsize=4_096)
def _by_name(server: str | None, name: str) -> tuple[int, bool]:
    """(the branch of :func:`classify` a tool's names choose, whether it is a browser
    navigation). Cached per tool: the name regexes cost more than the rest of a check of a
    call that sends nothing out (bounded: names come from the agent's configuration)."""
    tool = ToolName(server, name)
    if tool.builtin:
        kind = _WEB_BUILTIN if name in WEB_TOOLS else _SHELL if name in SHELL_TOOLS else _NONE
        return kind, False
    if tool.browser:
        navigation = bool(_BROWSER_NAVIGATION.search(name))
        return (_BROWSER if _BROWSER_EGRESS.search(name) else _NONE), navigation
    if _MCP_SHELL.search(name):
        return _SHELL, False
    if _LOCAL_SERVER.search(server or "") or _LOCAL_SEARCH.search(name):
        return _NONE, False
    if _WEB_VERB.search(name):
        return (_WEB if _SEARCH_VERB.search(name) else _WEB_FETCH), False
    if _HTTP_VERB.search(name):
        return _HTTP, False
    return _URL, False


def classify(
    tool: ToolName, arguments: Any, browser_local: bool | None = None
) -> tuple[str, list[str]]:
    """(egress class, the argument texts that leave the machine).

    ``browser_local``: whether the stream's last browser navigation went to a loopback page
    (typing into a local dev page is not egress).
    """
    kind = _by_name(tool.server, tool.name)[0]
    if kind == _NONE:
        return "none", []
    if kind == _URL:
        if _has_url(arguments) and not _all_urls_loopback(arguments):
            return "web", list(string_leaves(arguments))
        return "none", []
    if kind == _WEB:
        return "web", list(string_leaves(arguments))
    if kind in (_WEB_FETCH, _HTTP):
        if _all_urls_loopback(arguments):  # a fetch of / a request to this machine
            return "none", []
        return ("web" if kind == _WEB_FETCH else "http"), list(string_leaves(arguments))
    if kind == _SHELL:
        return network_texts(_command(arguments))
    if kind == _WEB_BUILTIN:
        if _all_urls_loopback(arguments):
            return "none", []
        keys = _WEB_SENT_KEYS.get(tool.name)
        if isinstance(arguments, Mapping) and keys:
            return "web", [s for key in keys for s in string_leaves(arguments.get(key))]
        return "web", list(string_leaves(arguments))
    # a browser action that can carry data to a page
    if _all_urls_loopback(arguments) or (browser_local and not _has_url(arguments)):
        return "none", []
    return "browser", list(string_leaves(arguments))


def _command(arguments: Any) -> str:
    """The command line of a shell tool call: its ``command`` argument when it has one (a
    ``description`` beside it is shown, not run), else all its string arguments."""
    if isinstance(arguments, Mapping) and isinstance(arguments.get("command"), str):
        return str(arguments["command"])
    return "\n".join(string_leaves(arguments))


def _urls(arguments: Any) -> list[str]:
    return [s.strip() for s in string_leaves(arguments) if _URL_ARGUMENT.match(s)]


def _has_url(arguments: Any) -> bool:
    match = _URL_ARGUMENT.match
    for text in string_leaves(arguments):  # noqa: SIM110 - any(genexpr) is a frame more, per call
        if match(text):
            return True
    return False


def _all_urls_loopback(arguments: Any) -> bool:
    """Every URL-valued argument points at this machine (and there is at least one)."""
    urls = _urls(arguments)
    return bool(urls) and all(LOOPBACK.match(u) for u in urls)


_URL_HOST: Final = re.compile(
    r"(?:https?|wss?|ftp|ssh|git)://(?:[^/\s@'\"<>]*@)?([A-Za-z0-9.-]+)", re.I
)
_USER_HOST: Final = re.compile(r"(?<![\w/])[A-Za-z0-9._-]+@([A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+):")


def destination_hosts(texts: list[str]) -> set[str]:
    """The hosts a call connects to: the hosts of its URL-valued sent texts when it has any;
    else, per text (a network command), the first URL host or ``user@host:`` in it. Hosts
    merely mentioned inside a payload are not destinations; loopback hosts are dropped."""
    hosts: set[str] = set()
    url_texts = [t for t in texts if _URL_ARGUMENT.match(t)]
    for text in url_texts or texts:
        found = [(m.start(), m.group(1)) for m in _URL_HOST.finditer(text)][:1]
        if not url_texts:
            found += [(m.start(), m.group(1)) for m in _USER_HOST.finditer(text)][:1]
        if found:
            hosts.add(min(found)[1].lower().rstrip("."))
    return {h for h in hosts if "." in h and not LOOPBACK.match(h)}
