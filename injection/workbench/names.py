"""The workbench's names a command line offers (the reference agents, the pin policies) and the
agents' default call timeout, apart from the agents and the suite (mcp, Arrow): ``toolwatch
workbench --help`` builds its options without them. Standard library only."""

from __future__ import annotations

from typing import Final

#: The reference agents by name (:func:`toolwatch.injection.workbench.agents.make_agent`).
AGENT_NAMES: Final[tuple[str, ...]] = ("naive", "careful", "llm")
#: where a suite's live detection gets its approved pins (``--pins``; :mod:`.live_detect`)
PIN_POLICIES: Final = ("clean", "store")
#: The agents' deadline per tool call by default, seconds (``AgentConfig.call_timeout``).
CALL_TIMEOUT: Final = 0.5
