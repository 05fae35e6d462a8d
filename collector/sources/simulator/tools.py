"""The simulated workload's tool inventory: 27 built-ins and 8 MCP servers with 51 tools.

Kept apart from the generator (:mod:`toolwatch.collector.sources.simulator.workload`) because it
is data: what each tool's calls look like (sizes, durations, failure rate, how often it opens a
response of parallel calls), which tools each kind of session works with, and which transitions
agents favour. Names are real Claude Code names (including the ones a client upgrade renamed)
and MCP names in the ``mcp__<server>__<tool>`` form, with server and tool names containing ``-``
and ``_`` as real ones do. The numbers are calibrated so the corpus meets the study's marginals
(BRIEF §2–3 and the public-transcripts note); see docs/ARCHITECTURE.md, "Simulated workload".
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """Shape of one tool's calls: medians and log-sds of bytes and seconds, failure rate."""

    name: str
    server: str | None
    in_med: float
    in_sd: float
    out_med: float
    out_sd: float
    fail: float
    dur_med: float
    dur_sd: float
    #: relative propensity to open a model response with several (parallel) calls
    parallel: float
    #: heavy right tail of the input size: (share of calls, median, log-sd)
    in_tail: tuple[float, float, float] | None = None

    @property
    def full_name(self) -> str:
        return self.name if self.server is None else f"mcp__{self.server}__{self.name}"


def _b(
    name: str,
    in_med: float,
    in_sd: float,
    out_med: float,
    out_sd: float,
    fail: float,
    dur_med: float,
    dur_sd: float,
    parallel: float,
    tail: tuple[float, float, float] | None = None,
) -> ToolSpec:
    return ToolSpec(
        name, None, in_med, in_sd, out_med, out_sd, fail, dur_med, dur_sd, parallel, tail
    )


# fmt: off
# name, input median B, log-sd, result median B, log-sd, failure rate, duration median s, log-sd,
# parallel propensity
BUILTIN_TOOLS: Final[tuple[ToolSpec, ...]] = (
    _b("Read", 115, 0.30, 2250, 1.3, 0.035, 0.03, 0.8, 2.6),
    _b("Edit", 480, 1.0, 100, 0.8, 0.07, 0.05, 0.6, 0.3),
    _b("Write", 2600, 1.1, 110, 0.25, 0.03, 0.05, 0.6, 0.5),
    _b("Bash", 200, 0.7, 35, 2.0, 0.245, 1.5, 1.7, 1.1, tail=(0.04, 1400, 0.7)),
    _b("Grep", 130, 0.4, 150, 1.4, 0.01, 0.15, 0.8, 2.6),
    _b("Glob", 70, 0.35, 250, 1.3, 0.005, 0.08, 0.7, 2.6),
    # WebFetch input: median 187 B, exp(mean + 1 sd of log) ≈ 270 B (the study's figures),
    # with a tail of long prompts to several KB
    _b("WebFetch", 180, 0.26, 1800, 1.0, 0.12, 3.5, 0.8, 2.0, tail=(0.025, 750, 0.6)),
    _b("WebSearch", 62, 0.3, 4000, 0.5, 0.02, 5.0, 0.5, 2.6),
    _b("Task", 1100, 0.8, 2200, 1.0, 0.03, 60.0, 1.0, 1.6),
    _b("TodoWrite", 750, 0.5, 170, 0.1, 0.003, 0.01, 0.5, 0.3),
    _b("MultiEdit", 1500, 0.9, 900, 0.6, 0.08, 0.06, 0.6, 0.2),
    _b("NotebookEdit", 900, 1.0, 250, 0.5, 0.10, 0.06, 0.6, 0.2),
    _b("NotebookRead", 85, 0.3, 8000, 1.2, 0.05, 0.05, 0.7, 1.0),
    _b("LS", 55, 0.3, 900, 1.0, 0.02, 0.03, 0.7, 1.5),
    _b("BashOutput", 42, 0.15, 600, 1.8, 0.02, 0.02, 0.6, 0.5),
    _b("KillShell", 40, 0.15, 90, 0.3, 0.05, 0.02, 0.6, 0.3),
    _b("ExitPlanMode", 1600, 0.8, 120, 0.5, 0.25, 8.0, 1.2, 0.0),
    _b("EnterPlanMode", 2, 0.0, 250, 0.1, 0.0, 0.01, 0.3, 0.0),
    _b("AskUserQuestion", 600, 0.6, 200, 0.8, 0.10, 20.0, 1.2, 0.0),
    _b("Skill", 45, 0.3, 1500, 1.0, 0.05, 0.05, 0.5, 0.2),
    _b("SlashCommand", 40, 0.3, 800, 1.0, 0.05, 0.5, 0.8, 0.1),
    _b("ListMcpResourcesTool", 25, 0.3, 400, 1.0, 0.10, 0.3, 0.6, 0.5),
    _b("ReadMcpResourceTool", 90, 0.3, 3000, 1.2, 0.15, 0.5, 0.7, 0.5),
    _b("Agent", 1100, 0.8, 2200, 1.0, 0.03, 60.0, 1.0, 1.6),
    _b("TaskOutput", 60, 0.2, 700, 1.8, 0.03, 2.0, 1.5, 0.5),
    _b("TaskStop", 42, 0.15, 90, 0.3, 0.05, 0.02, 0.6, 0.3),
    _b("ToolSearch", 55, 0.3, 1200, 0.5, 0.01, 0.05, 0.5, 0.2),
)
# fmt: on

#: The client upgrade in the test window: old name -> new name (old names are gone after it).
RENAMES: Final[dict[str, str]] = {
    "Task": "Agent",
    "BashOutput": "TaskOutput",
    "KillShell": "TaskStop",
}
#: Newer clients load MCP tools lazily: a session's first MCP call follows this tool.
LAZY_MCP_LOADER: Final = "ToolSearch"
#: The built-in that starts a subagent (before and after the upgrade).
SUBAGENT_TOOLS: Final = ("Task", "Agent")
#: Tools whose call may wait for a person's approval in interactive sessions.
APPROVAL_TOOLS: Final = frozenset(
    {"Bash", "Edit", "Write", "MultiEdit", "WebFetch", "NotebookEdit"}
)


@dataclass(frozen=True, slots=True)
class ServerSpec:
    """One MCP server: its call budget in the full corpus, its tools and their habits."""

    name: str
    calls: int
    #: in_med, in_sd, out_med, out_sd, fail, dur_med, dur_sd, parallel (overridable per tool)
    default: tuple[float, float, float, float, float, float, float, float]
    #: (tool, relative weight, overrides of ``default`` by field name)
    tools: tuple[tuple[str, float, Mapping[str, float]], ...]
    #: boost of a tool as the first call of an episode (navigate, authenticate, ...)
    entry: dict[str, float]
    #: (previous, next) -> transition multiplier
    affinity: dict[tuple[str, str], float]


_PW = "plugin_playwright_playwright"
_NONE: Final[dict[str, float]] = {"in_med": 2, "in_sd": 0}  # no arguments: "{}"

# fmt: off
SERVERS: Final[tuple[ServerSpec, ...]] = (
    ServerSpec(
        _PW, 860, (60, 0.5, 3000, 1.4, 0.06, 1.2, 0.8, 0.3),
        (
            ("browser_snapshot", 22, _NONE | {"out_med": 12000, "out_sd": 1.0}),
            ("browser_click", 20, {"in_med": 110, "fail": 0.09}),
            ("browser_navigate", 14, {"in_med": 70, "in_sd": 0.35, "out_med": 6000}),
            ("browser_type", 9, {"in_med": 150}),
            ("browser_take_screenshot", 7, {"in_med": 30, "out_med": 60000, "out_sd": 0.6}),
            ("browser_wait_for", 6, {"in_med": 20, "out_med": 2000}),
            ("browser_evaluate", 5, {"in_med": 250, "in_sd": 0.9, "fail": 0.12}),
            ("browser_press_key", 4, {"in_med": 25}),
            ("browser_fill_form", 3, {"in_med": 400}),
            ("browser_close", 2, _NONE | {"out_med": 50, "out_sd": 0.3}),
            ("browser_tabs", 2, {"in_med": 20}),
            ("browser_navigate_back", 2, _NONE),
            ("browser_hover", 1.5, {"in_med": 100}),
            ("browser_select_option", 1.5, {"in_med": 120}),
            ("browser_console_messages", 1.5, _NONE | {"out_med": 1500}),
            ("browser_network_requests", 1.2, _NONE | {"out_med": 5000}),
        ),
        {"browser_navigate": 8.0, "browser_snapshot": 2.0},
        {
            ("browser_navigate", "browser_snapshot"): 5, ("browser_click", "browser_snapshot"): 3,
            ("browser_snapshot", "browser_click"): 4, ("browser_snapshot", "browser_type"): 2,
            ("browser_type", "browser_click"): 2, ("browser_type", "browser_press_key"): 3,
            ("browser_wait_for", "browser_snapshot"): 3, ("browser_click", "browser_wait_for"): 2,
            ("browser_fill_form", "browser_click"): 3, ("browser_hover", "browser_click"): 3,
            ("browser_navigate", "browser_take_screenshot"): 2,
        },
    ),
    ServerSpec(
        "github", 290, (90, 0.5, 4000, 1.2, 0.05, 0.8, 0.7, 0.8),
        (
            ("get_file_contents", 25, {}),
            ("search_code", 15, {}),
            ("get_issue", 10, {}),
            ("get_pull_request", 10, {}),
            ("list_issues", 8, {}),
            ("list_pull_requests", 8, {}),
            ("add_issue_comment", 5, {"in_med": 600, "in_sd": 0.8, "out_med": 800}),
            ("search_repositories", 5, {}),
            ("create_pull_request", 4, {"in_med": 1200, "in_sd": 0.7, "out_med": 1500}),
            ("create_issue", 3, {"in_med": 900, "in_sd": 0.8, "out_med": 1200}),
        ),
        {"search_code": 2.0, "list_issues": 2.0, "list_pull_requests": 2.0},
        {
            ("search_code", "get_file_contents"): 4, ("list_issues", "get_issue"): 4,
            ("get_issue", "add_issue_comment"): 2, ("list_pull_requests", "get_pull_request"): 4,
            ("search_repositories", "get_file_contents"): 3,
        },
    ),
    ServerSpec(
        "serena", 200, (120, 0.5, 1500, 1.2, 0.04, 0.3, 0.7, 0.6),
        (
            ("find_symbol", 30, {}),
            ("get_symbols_overview", 20, {}),
            ("search_for_pattern", 15, {}),
            ("find_referencing_symbols", 12, {}),
            ("replace_symbol_body", 10, {"in_med": 900, "in_sd": 0.9, "out_med": 120}),
            ("list_dir", 7, {"in_med": 60}),
            ("read_memory", 6, {"in_med": 50}),
        ),
        {"get_symbols_overview": 3.0, "list_dir": 2.0},
        {
            ("get_symbols_overview", "find_symbol"): 4,
            ("find_symbol", "find_referencing_symbols"): 2,
            ("find_symbol", "replace_symbol_body"): 2, ("search_for_pattern", "find_symbol"): 2,
        },
    ),
    ServerSpec(
        "context7", 120, (60, 0.3, 9000, 0.6, 0.02, 1.5, 0.5, 0.5),
        (
            ("resolve-library-id", 50, {"out_med": 3000}),
            ("get-library-docs", 50, {"in_med": 90, "out_med": 12000}),
        ),
        {"resolve-library-id": 6.0},
        {("resolve-library-id", "get-library-docs"): 10},
    ),
    ServerSpec(
        "postgres", 100, (160, 0.7, 900, 1.5, 0.12, 0.3, 1.0, 0.4),
        (
            ("query", 55, {}),
            ("describe_table", 20, {"in_med": 40}),
            ("list_tables", 15, _NONE),
            ("explain_query", 10, {}),
        ),
        {"list_tables": 3.0},
        {
            ("list_tables", "describe_table"): 4, ("describe_table", "query"): 4,
            ("query", "query"): 2,
        },
    ),
    ServerSpec(
        "memory", 80, (150, 0.7, 600, 1.0, 0.02, 0.05, 0.5, 0.5),
        (
            ("search_nodes", 35, {"in_med": 60}),
            ("add_observations", 25, {"in_med": 400}),
            ("create_entities", 20, {"in_med": 600}),
            ("read_graph", 20, _NONE | {"out_med": 8000}),
        ),
        {"search_nodes": 2.0, "read_graph": 2.0},
        {("search_nodes", "add_observations"): 2, ("read_graph", "search_nodes"): 2},
    ),
    ServerSpec(
        "claude_ai_Notion", 70, (100, 0.5, 4000, 1.0, 0.04, 1.2, 0.6, 0.5),
        (
            ("notion-fetch", 40, {}),
            ("notion-search", 35, {}),
            ("notion-update-page", 13, {"in_med": 1200}),
            ("notion-create-pages", 12, {"in_med": 2500}),
        ),
        {"notion-search": 3.0},
        {("notion-search", "notion-fetch"): 5},
    ),
    ServerSpec(
        "claude_ai_Gmail", 52, (80, 0.5, 3000, 1.0, 0.05, 1.0, 0.6, 0.5),
        (
            ("get_thread", 40, {"out_med": 6000}),
            ("search_threads", 35, {}),
            ("create_draft", 15, {"in_med": 1200}),
            ("authenticate", 10, _NONE | {"out_med": 300}),
        ),
        {"authenticate": 30.0, "search_threads": 2.0},
        {("authenticate", "search_threads"): 5, ("search_threads", "get_thread"): 5},
    ),
)
# fmt: on


def _mcp_specs() -> tuple[ToolSpec, ...]:
    keys = ("in_med", "in_sd", "out_med", "out_sd", "fail", "dur_med", "dur_sd", "parallel")
    specs = []
    for server in SERVERS:
        for name, _, overrides in server.tools:
            values = {
                k: float(overrides.get(k, v)) for k, v in zip(keys, server.default, strict=True)
            }
            specs.append(ToolSpec(name, server.name, **values))  # type: ignore[arg-type]
    return tuple(specs)


MCP_TOOLS: Final[tuple[ToolSpec, ...]] = _mcp_specs()
ALL_TOOLS: Final[tuple[ToolSpec, ...]] = BUILTIN_TOOLS + MCP_TOOLS
#: full tool name -> index into :data:`ALL_TOOLS`
TOOL_INDEX: Final[dict[str, int]] = {t.full_name: i for i, t in enumerate(ALL_TOOLS)}

# fmt: off
#: Session kinds -> built-in tool weights (a kind never uses a tool it does not list).
KIND_WEIGHTS: Final[dict[str, dict[str, float]]] = {
    "code": {
        "Read": 30, "Bash": 32, "Edit": 15, "Grep": 7, "TodoWrite": 5, "Glob": 4, "Write": 4,
        "MultiEdit": 1.5, "Task": 0.45, "WebFetch": 0.8, "LS": 0.8, "WebSearch": 0.6,
        "BashOutput": 0.3, "AskUserQuestion": 0.4, "ExitPlanMode": 0.4, "Skill": 0.3,
        "KillShell": 0.2, "SlashCommand": 0.25, "EnterPlanMode": 0.2, "NotebookEdit": 0.15,
        "NotebookRead": 0.15, "ListMcpResourcesTool": 0.08, "ReadMcpResourceTool": 0.08,
    },
    "ops": {
        "Bash": 45, "Read": 20, "Edit": 8, "Grep": 6, "Write": 4, "Glob": 3, "TodoWrite": 3,
        "BashOutput": 0.6, "LS": 1.5, "WebFetch": 0.8, "WebSearch": 0.8, "KillShell": 0.5,
        "Task": 0.5, "AskUserQuestion": 0.2, "SlashCommand": 0.2, "Skill": 0.2,
        "ExitPlanMode": 0.2, "ListMcpResourcesTool": 0.1, "ReadMcpResourceTool": 0.1,
    },
    "research": {
        "Read": 18, "WebFetch": 10, "WebSearch": 8, "Bash": 12, "Write": 8, "Edit": 6,
        "Grep": 5, "TodoWrite": 4, "Glob": 3, "Task": 1.2, "LS": 0.5, "NotebookEdit": 0.4,
        "NotebookRead": 0.4, "AskUserQuestion": 0.3, "Skill": 0.2, "ExitPlanMode": 0.2,
        "ReadMcpResourceTool": 0.1,
    },
    "browser": {
        "Bash": 25, "Read": 20, "Edit": 10, "Write": 4, "Grep": 4, "TodoWrite": 3, "Glob": 2,
        "WebFetch": 2, "BashOutput": 0.5, "KillShell": 0.5, "Task": 0.3,
    },
    "notes": {
        "Read": 10, "Write": 6, "Bash": 6, "Edit": 4, "WebSearch": 3, "WebFetch": 3, "Grep": 2,
        "TodoWrite": 1, "Glob": 1, "Skill": 0.5, "SlashCommand": 0.5,
    },
    # subagents
    "explore": {
        "Read": 35, "Grep": 20, "Glob": 15, "Bash": 15, "LS": 3, "WebFetch": 2, "WebSearch": 2,
        "NotebookRead": 0.3,
    },
    "sub_research": {
        "WebFetch": 22, "WebSearch": 18, "Read": 14, "Bash": 6, "Grep": 4, "Write": 3, "Glob": 2,
    },
    "general": {
        "Read": 25, "Bash": 28, "Edit": 14, "Grep": 8, "Glob": 6, "Write": 5, "TodoWrite": 3,
        "MultiEdit": 1, "WebFetch": 1, "Task": 0.3,
    },
}
MAIN_KINDS: Final[tuple[tuple[str, float], ...]] = (
    ("code", 0.58), ("ops", 0.15), ("research", 0.12), ("browser", 0.09), ("notes", 0.06),
)
SUB_KINDS: Final[tuple[tuple[str, float], ...]] = (
    ("explore", 0.5), ("sub_research", 0.2), ("general", 0.3),
)

#: P(a session of this kind works with this MCP server).
SERVER_USE: Final[dict[str, dict[str, float]]] = {
    _PW: {"browser": 1.0, "research": 0.04, "code": 0.02},
    "github": {"code": 0.10, "ops": 0.12, "browser": 0.05, "research": 0.05, "general": 0.04},
    "serena": {"code": 0.08, "explore": 0.06, "general": 0.05},
    "context7": {"code": 0.07, "research": 0.12, "explore": 0.04, "sub_research": 0.10},
    "postgres": {"ops": 0.25, "code": 0.02, "general": 0.02},
    "memory": {"notes": 0.5, "code": 0.03, "research": 0.05},
    "claude_ai_Notion": {"notes": 0.5, "research": 0.06},
    "claude_ai_Gmail": {"notes": 0.6, "research": 0.02},
}

#: Built-in transitions agents favour (previous -> next multiplier; 1 elsewhere): the
#: read → edit → run loop, search → read, fetch after search, polling a background shell.
AFFINITY: Final[dict[tuple[str, str], float]] = {
    ("Read", "Edit"): 3, ("Read", "Read"): 1.5, ("Read", "MultiEdit"): 2, ("Read", "Write"): 1.5,
    ("Edit", "Bash"): 3, ("Edit", "Edit"): 1.5, ("Edit", "Read"): 1.5, ("MultiEdit", "Bash"): 3,
    ("Write", "Bash"): 3, ("Bash", "Read"): 1.5, ("Bash", "Bash"): 1.5, ("Bash", "Edit"): 1.5,
    ("Bash", "BashOutput"): 3, ("Bash", "TodoWrite"): 1.5, ("Grep", "Read"): 4,
    ("Grep", "Grep"): 2, ("Glob", "Read"): 4, ("Glob", "Grep"): 1.5, ("LS", "Read"): 3,
    ("WebSearch", "WebFetch"): 5, ("WebSearch", "WebSearch"): 2, ("WebFetch", "WebFetch"): 2,
    ("WebFetch", "Write"): 2, ("TodoWrite", "Read"): 2, ("TodoWrite", "Edit"): 1.5,
    ("TodoWrite", "Bash"): 1.5, ("Task", "Read"): 2, ("Task", "Task"): 2,
    ("BashOutput", "BashOutput"): 2, ("BashOutput", "KillShell"): 2, ("EnterPlanMode", "Read"): 3,
    ("Read", "ExitPlanMode"): 1.5, ("NotebookRead", "NotebookEdit"): 4,
    ("ListMcpResourcesTool", "ReadMcpResourceTool"): 6,
}
# fmt: on
