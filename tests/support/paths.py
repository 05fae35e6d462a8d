"""Where the test tree, its fixtures and the repository are, for every test module."""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
REPO = TESTS.parent
FIXTURES = TESTS / "fixtures"
MCP_TEST_SERVER = TESTS / "support" / "mcp_test_server.py"
SUBSCRIBING_SERVER = TESTS / "support" / "subscribing_server.py"
