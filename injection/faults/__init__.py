"""Faults in real MCP responses: the scenario model and library, the 12 fault actions, the
engine that decides which call is faulted, and the MCP server that serves a scenario's tools.

Users need a few names: :func:`load_scenario` / :func:`load_library` (scenarios from files or
the shipped library), :class:`Scenario`, :class:`FaultEngine` (apply a scenario's fault call by
call), :func:`validate_path` and :data:`FAULT_ACTIONS` (the taxonomy). The AgentCheck converter
(``agentcheck.py``), JSON pointers (``pointer.py``), result edits (``edits.py``) and the actions
(``actions.py``) are internal.

The names load on first use (:mod:`toolwatch.lazy`): ``taxonomy`` (``scenarios --help``'s
fault choices) needs no mcp.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from toolwatch.lazy import lazy_names

if TYPE_CHECKING:
    from toolwatch.injection.faults.engine import FaultEngine
    from toolwatch.injection.faults.library import (
        find_scenario,
        load_library,
        load_scenario,
        validate_path,
    )
    from toolwatch.injection.faults.scenario import Scenario, ScenarioError
    from toolwatch.injection.faults.taxonomy import FAULT_ACTIONS, FAULT_NAMES

__all__ = [
    "FAULT_ACTIONS",
    "FAULT_NAMES",
    "FaultEngine",
    "Scenario",
    "ScenarioError",
    "find_scenario",
    "load_library",
    "load_scenario",
    "validate_path",
]
__getattr__ = lazy_names(
    __name__,
    {
        "FAULT_ACTIONS": "toolwatch.injection.faults.taxonomy",
        "FAULT_NAMES": "toolwatch.injection.faults.taxonomy",
        "FaultEngine": "toolwatch.injection.faults.engine",
        "Scenario": "toolwatch.injection.faults.scenario",
        "ScenarioError": "toolwatch.injection.faults.scenario",
        "find_scenario": "toolwatch.injection.faults.library",
        "load_library": "toolwatch.injection.faults.library",
        "load_scenario": "toolwatch.injection.faults.library",
        "validate_path": "toolwatch.injection.faults.library",
    },
)
