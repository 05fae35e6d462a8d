"""What injectors borrow from training: which tools count as network tools."""

from __future__ import annotations

from toolwatch.injection.spans.context import is_network_tool


def test_network_tools_open_a_url() -> None:
    """WebFetch and browser ``navigate`` tools carry a URL; ``navigate_back`` does not."""
    assert is_network_tool("WebFetch")
    assert is_network_tool("mcp__plugin_playwright_playwright__browser_navigate")
    assert is_network_tool("mcp__puppeteer__puppeteer_navigate")
    assert not is_network_tool("mcp__plugin_playwright_playwright__browser_navigate_back")
    assert not is_network_tool("Read")
