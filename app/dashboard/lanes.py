"""Timeline lanes: a label per tool that fits beside the panels, and the panels' width.

A tool name may be 4,096 bytes and an MCP tool carries its server's name in front
(``mcp__server__tool``), so a lane label keeps what tells tools apart — the start of the server
and the tool name — in a bounded width (the whole name is in the timeline's tooltip), and the
panels take the width the labels leave, so the whole timeline fits the page.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

#: The most characters of a timeline lane's label: an MCP tool keeps the start of its server and
#: its tool name (cut in the middle when that alone is longer), any other name its start and end,
#: so a long server name no longer hides the tool; the whole name is in the tooltip.
LANE_LABEL_CHARS = 40
#: The widest a lane's label is drawn (Vega ends a wider one with "…"): 40 wide characters.
LANE_LABEL_PX = 260
#: Characters of a long MCP server name a lane label keeps before its "…".
SERVER_CHARS = 10
#: The whole timeline fits this many pixels: the main column beside the sidebar in a 1,400 px
#: window was 940 px wide, 968 px at 1,366 px since main.PAGE_CSS (the legends on the right
#: were cut at 640 px panels + 260 px labels).
TIMELINE_PX = 900
#: The timeline's parts beside its panels and lane labels: the axis title, the legends on the
#: right ("same response", "output_bytes") and the padding between them.
TIMELINE_CHROME_PX = 160
#: A lane label's width per character, generously (Vega's 10 px axis font is 5–6 px a letter).
LABEL_CHAR_PX = 6
PANEL_MAX_PX, PANEL_MIN_PX = 640, 360
#: On a phone (a container narrower than ``charts.NARROW_PX``) a lane label is at most this many
#: characters, the server's first :data:`PHONE_SERVER_CHARS` kept, drawn at most
#: :data:`PHONE_LANE_LABEL_PX` wide: 260 px of labels left a 390 px screen no room for the calls.
PHONE_LANE_CHARS, PHONE_SERVER_CHARS, PHONE_LANE_LABEL_PX = 24, 4, 150


def short_tool(tool: str) -> str:
    """A tool's name as ``server · tool`` for ``mcp__server__tool`` (the long shared prefix
    made four different tools look the same), the name itself otherwise."""
    if tool.startswith("mcp__"):
        server, _, name = tool[5:].partition("__")
        if name:
            return f"{server} · {name}"
    return tool


def middle_cut(text: str, limit: int) -> str:
    """``text`` in at most ``limit`` characters, its start and end kept around a "…"."""
    if len(text) <= limit:
        return text
    head = limit // 2
    tail = limit - 1 - head
    return text[:head] + "…" + (text[-tail:] if tail > 0 else "")


def lane_label(tool: str, limit: int = LANE_LABEL_CHARS, server_chars: int = SERVER_CHARS) -> str:
    """A timeline lane's label: :func:`short_tool` in at most ``limit`` characters. An MCP tool
    keeps its tool name whole when it fits beside the server's first ``server_chars``
    characters, the server's start and the name's start and end otherwise; any other name is
    cut in the middle."""
    full = short_tool(tool)
    if len(full) <= limit:
        return full
    if full == tool:  # not an MCP tool
        return middle_cut(full, limit)
    server, _, name = tool[5:].partition("__")
    kept = server if len(server) <= server_chars else server[:server_chars] + "…"
    name = middle_cut(name, limit - 3 - len(kept))
    room = limit - 3 - len(name)
    if len(server) > room:
        server = server[: room - 1] + "…"
    return f"{server} · {name}"


def lane_labels(
    tools: Sequence[str], limit: int = LANE_LABEL_CHARS, server_chars: int = SERVER_CHARS
) -> dict[str, str]:
    """Each tool's :func:`lane_label`, made unique: tools cut to the same label (they differ
    only in the part left out) get " #2", " #3", … in order of appearance, so they keep a
    lane each."""
    labels: dict[str, str] = {}
    taken: dict[str, int] = {}
    for tool in dict.fromkeys(tools):
        label = lane_label(tool, limit, server_chars)
        n = taken.get(label, 0) + 1
        taken[label] = n
        labels[tool] = label if n == 1 else f"{label} #{n}"
    return labels


def panel_width(lanes: Sequence[str]) -> int:
    """The timeline's panel width: as wide as :data:`TIMELINE_PX` leaves beside the lane labels
    (as long as they are here) and the legends, within the panel bounds."""
    longest = max((len(lane) for lane in lanes), default=0)
    label_px = min(LANE_LABEL_PX, LABEL_CHAR_PX * longest)
    return max(PANEL_MIN_PX, min(PANEL_MAX_PX, TIMELINE_PX - TIMELINE_CHROME_PX - label_px))


def phone_label_expr(lanes: dict[str, str], narrow: str) -> str:
    """A Vega ``labelExpr`` giving each lane (``lanes``: tool -> its desktop label) its
    shorter phone label (:data:`PHONE_LANE_CHARS`) in a narrow container, so Vega's own cut at
    the end does not hide the tool name there; ``narrow`` is the Vega test for a phone."""
    phone = lane_labels(list(lanes), PHONE_LANE_CHARS, PHONE_SERVER_CHARS)
    table = json.dumps({lanes[t]: phone[t] for t in lanes if phone[t] != lanes[t]})
    return f"{narrow} ? ({table}[datum.value] || datum.value) : datum.value"
