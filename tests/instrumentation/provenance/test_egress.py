"""Egress classes and the texts that leave the machine, decided locally from name and arguments."""

from __future__ import annotations

from typing import Any, Final

import pytest

from toolwatch.conventions import EGRESS_CLASSES
from toolwatch.instrumentation.provenance.egress import (
    ToolName,
    browser_navigation_local,
    classify,
    destination_hosts,
    source_is_remote,
)
from toolwatch.instrumentation.provenance.shell import network_texts, segments


def _class(tool: str, args: Any, server: str | None = None, **kw: Any) -> str:
    return classify(ToolName.of(tool, server), args, **kw)[0]


@pytest.mark.parametrize(
    ("tool", "args", "expected"),
    [
        ("WebFetch", {"url": "https://docs.example.com/a", "prompt": "summarise"}, "web"),
        ("WebFetch", {"url": "http://localhost:3000/", "prompt": "x"}, "none"),
        ("WebSearch", {"query": "river anomaly detection"}, "web"),
        ("Read", {"file_path": "/etc/hosts"}, "none"),
        ("Bash", {"command": "curl -s https://api.example.com/v1 -d @data.json"}, "shell"),
        ("Bash", {"command": "curl -s http://localhost:8000/health"}, "none"),
        ("Bash", {"command": "cd repo && git push origin main"}, "shell"),
        ("Bash", {"command": "git -C repo status"}, "none"),
        ("Bash", {"command": "ssh deploy@build.example.org 'systemctl restart app'"}, "shell"),
        ("Bash", {"command": "python3 -c 'import requests; requests.post(U, data=D)'"}, "script"),
        ("Bash", {"command": "python3 -c 'print(1)'"}, "none"),
        ("Bash", {"command": "cat > notes.md <<'EOF'\ncurl https://x.example.net\nEOF"}, "none"),
        ("Bash", {"command": "ls  # curl https://x.example.net", "description": "list"}, "none"),
        ("Bash", {"command": "ls", "description": "curl the health endpoint"}, "none"),
        ("mcp__fetch__fetch", {"url": "https://example.org"}, "web"),
        ("mcp__filesystem__search_files", {"path": "/", "pattern": "x"}, "none"),
        ("mcp__tavily__tavily-search", {"query": "x"}, "web"),
        ("mcp__http__http_request", {"method": "POST", "body": "x"}, "http"),
        ("mcp__notes__add_note", {"text": "see https://example.org/a"}, "none"),
        ("mcp__notes__add_note", {"link": "https://example.org/a"}, "web"),
        (
            "mcp__plugin_playwright_playwright__browser_navigate",
            {"url": "https://a.example"},
            "browser",
        ),
        (
            "mcp__plugin_playwright_playwright__browser_navigate",
            {"url": "http://127.0.0.1:5173"},
            "none",
        ),
        ("mcp__plugin_playwright_playwright__browser_snapshot", {}, "none"),
        ("mcp__shell__execute_command", {"command": "wget https://x.example.net/f"}, "shell"),
    ],
)
def test_classes(tool: str, args: Any, expected: str) -> None:
    assert expected in EGRESS_CLASSES
    assert _class(tool, args) == expected


def test_a_bare_mcp_tool_is_read_with_its_server() -> None:
    """The instrumentation sees bare MCP names; the importer sees mcp__server__tool."""
    args = {"url": "https://example.org"}
    assert _class("fetch", args, server="fetch") == _class("mcp__fetch__fetch", args) == "web"
    assert _class("fetch", args, server=None) == "none"  # a client's own tool of that name
    assert _class("fetch", args, server="") == "web"  # an MCP server without a name


def test_webfetch_sends_only_its_url() -> None:
    _, sent = classify(ToolName.of("WebFetch", None), {"url": "https://a.example/x", "prompt": "p"})
    assert sent == ["https://a.example/x"]


def test_shell_sends_only_its_network_segments_with_their_heredoc() -> None:
    cmd = (
        "npm run build && cat > out.txt <<'EOF'\nlocal data\nEOF\n"
        "curl -X POST https://c.example.net/u --data-binary @- <<'EOF'\npayload line\nEOF"
    )
    cls, sent = network_texts(cmd)
    assert cls == "shell"
    assert len(sent) == 1 and "payload line" in sent[0] and "local data" not in sent[0]


def test_segments_respect_quotes_and_comments() -> None:
    parts = segments("echo 'a; b' && curl \"x|y\" # trailing; comment\nls")
    assert [p.text for p in parts] == ["echo 'a; b'", 'curl "x|y"', "ls"]


def test_typing_into_a_local_page_is_not_egress() -> None:
    nav = ToolName.of("mcp__playwright__browser_navigate", None)
    typ = ToolName.of("mcp__playwright__browser_type", None)
    assert browser_navigation_local(nav, {"url": "http://localhost:5173"}) is True
    assert classify(typ, {"text": "hello"}, browser_local=True)[0] == "none"
    assert classify(typ, {"text": "hello"}, browser_local=False)[0] == "browser"


def test_remote_sources() -> None:
    assert source_is_remote(ToolName.of("WebFetch", None))
    assert source_is_remote(ToolName.of("mcp__brave__brave_web_search", None))
    assert source_is_remote(ToolName.of("browser_snapshot", "playwright"))
    assert not source_is_remote(ToolName.of("Read", None))
    assert not source_is_remote(ToolName.of("Bash", None))
    assert not source_is_remote(ToolName.of("mcp__filesystem__read_file", None))


def test_destination_hosts() -> None:
    assert destination_hosts(["https://Api.Example.com/v1?q=1"]) == {"api.example.com"}
    assert destination_hosts(["scp f deploy@build.example.org:/srv"]) == {"build.example.org"}
    assert destination_hosts(["curl http://localhost:8080/x"]) == set()
    # a host only mentioned inside the payload of a URL-valued call is not its destination
    assert destination_hosts(["https://c.example.net/?d=see%20https://other.example"]) == {
        "c.example.net"
    }


@pytest.mark.parametrize(
    ("tool", "web"),
    [
        # what these do sends nothing to the web by itself: web only when given a URL
        ("mcp__crm__lookup", False),
        ("mcp__directory__lookup_user", False),
        ("mcp__crm__fetch_record", False),
        ("mcp__crm__fetchRecords", False),
        ("mcp__tables__fetch_rows", False),
        ("mcp__pdf-tools__extract_text", False),
        ("mcp__notion__get_page", False),
        # a fetch of a page or a URL, a search, a web service's extractor: web
        ("mcp__fetch__fetch", True),
        ("mcp__reader__read_url", True),
        ("mcp__ddg-search__fetch_content", True),
        ("mcp__fetch__imageFetch", True),
        ("mcp__pages__fetch_page", True),
        ("mcp__tavily__tavily_extract", True),
        ("mcp__tavily__tavily_research", True),
        ("mcp__kb__search", True),
    ],
)
def test_ordinary_tool_names_are_web_egress_only_when_they_reach_the_web(
    tool: str, web: bool
) -> None:
    """`lookup` (and a data store's `fetch_record`, a PDF's `extract_text`) were classed web by
    name, so any bytes in their arguments counted as sent off the machine."""
    assert _class(tool, {"key": "A-1042"}) == ("web" if web else "none")
    assert _class(tool, {"key": "A-1042", "src": "https://a.example/x"}) == "web"
    assert source_is_remote(ToolName.of(tool, None)) is web


def test_each_segment_of_a_command_is_split_into_words_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Its program, its targets and its subcommand are read from one split (shlex was an
    eighth of an import's provenance pass when each read split again)."""
    import shlex

    split = shlex.split
    texts: list[str] = []

    def counting(text: str, comments: bool = False) -> list[str]:
        texts.append(text)
        return split(text, comments=comments)

    monkeypatch.setattr(shlex, "split", counting)
    cls, sent = network_texts("curl -s http://127.0.0.1:8080/x; git -C repo push origin main")
    assert (cls, sent) == ("shell", ["git -C repo push origin main"])
    assert sorted(texts) == ["curl -s http://127.0.0.1:8080/x", "git -C repo push origin main"]


#: (tool, server, arguments, class): names each rule decides, both sides of every line
NAME_RULES: Final = [
    # a search of a codebase, of grep matches or of symbols stays on the machine; others are web
    ("codebase_search", "dev-tools", {"query": "def main"}, "none"),
    ("search_codebase", "", {"query": "def main"}, "none"),
    ("grep_search", "ide-bridge", {"pattern": "TODO"}, "none"),
    ("workspace_symbols", "lsp", {"query": "Parser"}, "none"),
    ("search_docs", "kb", {"query": "vpc peering"}, "web"),
    ("search_symbols", "market-data", {"keywords": "ACME"}, "web"),
    ("search_issues", "github", {"q": "is:open"}, "web"),
    ("search_code", "github", {"q": "repo:a/b x"}, "web"),
    # a fetch or a request to this machine sends nothing off it; to anywhere else it does
    ("fetch", "fetch", {"url": "http://localhost:8000/health"}, "none"),
    ("fetch_content", "ddg-search", {"url": "http://127.0.0.1:5173/"}, "none"),
    ("fetch", "fetch", {"url": "http://[::1]:8080/"}, "none"),
    ("http_post", "http", {"url": "http://localhost:9/in", "body": "x"}, "none"),
    ("fetch", "fetch", {"url": "https://example.org/"}, "web"),
    ("http_post", "http", {"url": "https://hooks.example.com/in", "body": "x"}, "http"),
    ("fetch", "fetch", {"url": "http://localhost/", "next": "https://example.org/"}, "web"),
    # a search's query goes to the search service even when it names a local URL
    ("web_search", "brave", {"query": "http://localhost:3000 404"}, "web"),
    # writes to remote services, snake_case or camelCase
    ("send_email", "mail", {"to": "a@example.org"}, "http"),
    ("sendEmail", "mail", {"to": "a@example.org"}, "http"),
    ("uploadFile", "drive", {"name": "a.txt"}, "http"),
    ("createGist", "gh", {"content": "x"}, "http"),
    ("post_message", "slack", {"text": "x"}, "http"),
    ("postMessage", "slack", {"text": "x"}, "http"),
    ("webhook", "hooks", {"payload": "x"}, "http"),
    ("sender_stats", "mail", {"day": "monday"}, "none"),
    ("postcode_lookup", "geo", {"postcode": "SW1A 1AA"}, "none"),
    ("createdBy", "crm", {"id": "7"}, "none"),
    # a browser tool by its own name, on a server of any name
    ("puppeteer_evaluate", "general-tools", {"script": "fetch(u, {body: d})"}, "browser"),
    ("puppeteer_navigate", "general-tools", {"url": "https://a.example/"}, "browser"),
    ("playwright_navigate", "x", {"url": "http://127.0.0.1:3000"}, "none"),
    ("puppeteer_screenshot", "general-tools", {}, "none"),
    # a local server is known by a whole word: `time`, not `runtime`
    ("fetch_current_time", "time", {}, "none"),
    ("search", "runtime-search", {"query": "x"}, "web"),
]


@pytest.mark.parametrize(("tool", "server", "args", "expected"), NAME_RULES)
def test_name_rules(tool: str, server: str, args: Any, expected: str) -> None:
    """Each rule of the docs' egress table, with a name on each side of it."""
    assert _class(tool, args, server=server) == expected


def test_a_local_search_is_a_local_source() -> None:
    """Bytes copied from a codebase search are the machine's own: a payload, not a link."""
    assert not source_is_remote(ToolName("dev-tools", "codebase_search"))
    assert source_is_remote(ToolName("kb", "search_docs"))
