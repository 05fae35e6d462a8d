"""Faults in real MCP responses: the scenario model and library, the 12 fault actions, the
engine that decides which call is faulted, and the MCP server that serves a scenario's tools.

Users need a few names: :func:`load_scenario` / :func:`load_library` (scenarios from files or
the shipped library), :class:`Scenario`, :class:`FaultEngine` (apply a scenario's fault call by
call), :func:`validate_path` and :data:`FAULT_ACTIONS` (the taxonomy). The AgentCheck converter
(``agentcheck.py``), JSON pointers (``pointer.py``), result edits (``edits.py``) and the actions
(``actions.py``) are internal.
"""

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
