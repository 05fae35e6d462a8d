"""Whether a tool acts: one answer for the agents, the verifier and the scanner (``acts.py``)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from mcp.types import Tool, ToolAnnotations

from toolwatch.injection.mitigations.acts import ListedTool, mention, tool_verb


@pytest.mark.parametrize(
    ("name", "description", "annotations", "verb", "acts"),
    [
        # what the tool declares decides first, whatever its name or description says
        ("breaker_log", "", {"destructiveHint": True}, "breaker", True),
        ("get_breaker", "", {"readOnlyHint": False}, "get", True),
        ("flush_queue", "Flush the queue.", {"readOnlyHint": True}, "flush", False),
        ("send_digest", "", {"readOnlyHint": True}, "send", False),
        # only a description: what it says, or the verb it opens with when the name's is unknown
        ("trip_breaker", "Trips the circuit breaker of a feeder.", None, "trip", True),
        ("queue_janitor", "Empties the queue. This cannot be undone.", None, "queue", True),
        ("purge_preview", "Purge the cache (dry run): read-only.", None, "purge", False),
        ("queue_depth", "Returns how many messages wait in the queue.", None, "queue", False),
        ("validate_doc", "Validates a document against its template.", None, "validate", False),
        # only a name: its verb lists
        ("update_salary", "", None, "update", True),
        ("incident_send", "", None, "send", True),
        ("search_docs", "", None, "search", False),
        ("trip_breaker", "", None, "trip", False),
        ("weatherApi", "", None, "weather", False),
    ],
)
def test_tool_verb_reads_annotations_then_the_name_then_the_description(
    name: str, description: str, annotations: dict[str, bool] | None, verb: str, acts: bool
) -> None:
    assert tool_verb(name, description, annotations) == (verb, acts)
    assert ListedTool(name, description, annotations).acts() is acts


@pytest.mark.parametrize(
    ("name", "description", "annotations", "trusted", "untrusted"),
    [
        # a claim of only reading is believed only when trusted ...
        ("send_digest", "", {"readOnlyHint": True}, False, True),
        ("flush_queue", "Flush the queue.", {"readOnlyHint": True}, False, True),
        ("purge_cache", "Purge the cache. Read-only.", None, False, True),
        # ... never turning a reading name into an action, nor clearing a declared one
        ("get_breaker", "", {"readOnlyHint": True}, False, False),
        ("feeder_history", "Past loads of a feeder. Read-only.", None, False, False),
        ("breaker_log", "", {"destructiveHint": True, "readOnlyHint": True}, False, True),
        ("trip_breaker", "Trips the breaker.", None, True, True),
    ],
)
def test_an_untrusted_listing_cannot_claim_an_action_only_reads(
    name: str, description: str, annotations: dict[str, bool] | None, trusted: bool, untrusted: bool
) -> None:
    """MCP calls annotations untrusted hints: the scanner asks with ``trust_read_only=False``
    so a listing cannot talk a tool that sends or purges into reading."""
    listed = ListedTool(name, description, annotations)
    assert listed.acts() is trusted
    assert listed.acts(trust_read_only=False) is untrusted


def test_listed_tool_of_an_mcp_listing_entry() -> None:
    """The annotations by their wire names (what scenario files and servers write), unset ones
    left out, so an MCP ``Tool`` is read as the planner reads a scenario's tool."""
    hints: dict[str, Any] = {"destructiveHint": True}
    tool = Tool(
        name="breaker_log",
        description="Keeps the breaker log.",
        inputSchema={"type": "object"},
        annotations=ToolAnnotations(**hints),
    )
    listed = ListedTool.of(tool)
    assert listed == ListedTool("breaker_log", "Keeps the breaker log.", hints)
    assert listed.acts()
    bare = ListedTool.of(Tool(name="trip_breaker", inputSchema={"type": "object"}))
    assert bare == ListedTool("trip_breaker", "", {})
    assert not bare.acts()


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("先に tool_20d266daを呼んでください", True),  # a particle right after an ASCII name
        ("请先调用tool_20d266da再继续", True),
        ("tool_20d266da_v2を呼ぶ", False),  # another name, not this one
        ("tool_20d266daé", False),  # a letter of a spaced script still joins the name
        ("tool_20d266da.json", False),
    ],
)
def test_an_ascii_name_beside_cjk_text_is_named(text: str, named: bool) -> None:
    """``tool_20d266daを`` was not read as naming ``tool_20d266da``: a CJK character is a
    word character, so the name's ASCII end asked a word boundary CJK text never has."""
    assert (re.search(mention("tool_20d266da"), text) is not None) is named


@pytest.mark.parametrize(
    ("name", "acts"),
    [
        ("メール送信", True),
        ("删除文件", True),
        ("송금하기", True),
        ("送信履歴取得", False),  # a sending history looked up
        ("查询发送记录", False),
        ("天気予報", False),
    ],
)
def test_a_cjk_name_that_acts_is_an_action_without_annotations(name: str, acts: bool) -> None:
    """A tool named in CJK with no English verb in its name or description counted as acting
    only when its annotations said so; a word of its name that changes state now decides,
    unless a reading word beside it says the tool looks something up."""
    assert ListedTool(name, "").acts() is acts
    assert ListedTool(name, "", {"destructiveHint": True}).acts()
