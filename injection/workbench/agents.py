"""The reference agents by name: ``naive``, ``careful`` and ``llm`` (the hosted-model agent, which
needs its environment).
"""

from __future__ import annotations

from toolwatch.injection.workbench.agent import Agent, AgentConfig
from toolwatch.injection.workbench.careful_agent import CarefulAgent
from toolwatch.injection.workbench.llm_agent import LLMAgent
from toolwatch.injection.workbench.naive_agent import NaiveAgent
from toolwatch.injection.workbench.names import AGENT_NAMES


def make_agent(name: str, config: AgentConfig | None = None) -> Agent:
    """A reference agent by name (``naive`` / ``careful``); ``llm`` needs the environment."""
    if name == "naive":
        return NaiveAgent(config)
    if name == "careful":
        return CarefulAgent(config)
    if name == "llm":
        return LLMAgent.from_env(config)
    raise ValueError(f"unknown agent {name!r}; choose from {', '.join(AGENT_NAMES)}")
