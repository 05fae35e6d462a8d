"""The reproduce → intervene → mitigate workbench: reference agents run a scenario clean, with
its fault injected, and with mitigations, over a real MCP server; the deterministic checks,
diagnostic labels and the first divergence say what went wrong and whether a mitigation fixed it.

Users need: :func:`run_scenario` / :func:`run_suite` with a :class:`WorkbenchConfig`, the
reference agents by name (:func:`make_agent`, :data:`AGENT_NAMES`), and the results
(:class:`RunReport`, :class:`SuiteResult`). Planning, evidence, checks, labels, replay and
reports are internal modules of this room.
The names load on first use (:mod:`toolwatch.lazy`): ``names`` (the agents' and pin policies'
names, ``workbench --help``'s choices) needs no mcp.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from toolwatch.lazy import lazy_names

if TYPE_CHECKING:
    from toolwatch.injection.workbench.agents import make_agent
    from toolwatch.injection.workbench.names import AGENT_NAMES
    from toolwatch.injection.workbench.runner import RunReport, WorkbenchConfig, run_scenario
    from toolwatch.injection.workbench.suite import SuiteResult, run_suite

__all__ = [
    "AGENT_NAMES",
    "RunReport",
    "SuiteResult",
    "WorkbenchConfig",
    "make_agent",
    "run_scenario",
    "run_suite",
]
__getattr__ = lazy_names(
    __name__,
    {
        "AGENT_NAMES": "toolwatch.injection.workbench.names",
        "RunReport": "toolwatch.injection.workbench.runner",
        "SuiteResult": "toolwatch.injection.workbench.suite",
        "WorkbenchConfig": "toolwatch.injection.workbench.runner",
        "make_agent": "toolwatch.injection.workbench.agents",
        "run_scenario": "toolwatch.injection.workbench.runner",
        "run_suite": "toolwatch.injection.workbench.suite",
    },
)
