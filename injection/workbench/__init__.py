"""The reproduce → intervene → mitigate workbench: reference agents run a scenario clean, with
its fault injected, and with mitigations, over a real MCP server; the deterministic checks,
diagnostic labels and the first divergence say what went wrong and whether a mitigation fixed it.

Users need: :func:`run_scenario` / :func:`run_suite` with a :class:`WorkbenchConfig`, the
reference agents by name (:func:`make_agent`, :data:`AGENT_NAMES`), and the results
(:class:`RunReport`, :class:`SuiteResult`). Planning, evidence, checks, labels, replay and
reports are internal modules of this room.
"""

from toolwatch.injection.workbench.agents import AGENT_NAMES, make_agent
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
