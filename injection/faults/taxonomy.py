"""The fault taxonomy (BRIEF §4), defined once: fault id → scenario action, short names for
messages, which faults are silent, and the ground-truth label of an injected call.
"""

from __future__ import annotations

from typing import Final

# --------------------------------------------------------------------------------------------
# The taxonomy (BRIEF §4): fault id -> scenario action, and a short name for messages
# --------------------------------------------------------------------------------------------

FAULT_ACTIONS: Final[dict[str, str]] = {
    "A1": "delay",
    "A2": "replace_with_error",
    "A3": "replace_with_403",
    "A4": "alter_schema",
    "B1": "inject_stale_data",
    "B2": "return_conflicting",
    "B3": "return_irrelevant",
    "B4": "return_empty",
    "C1": "prepend_injection",
    "C2": "poison_description",
    "C3": "inject_false_claim",
    "C4": "inject_exfiltration_instruction",
}
ACTION_FAULTS: Final[dict[str, str]] = {action: fid for fid, action in FAULT_ACTIONS.items()}
FAULT_NAMES: Final[dict[str, str]] = {
    "A1": "tool timeout",
    "A2": "server error",
    "A3": "permission denied",
    "A4": "schema drift",
    "B1": "stale data",
    "B2": "contradictory evidence",
    "B3": "irrelevant result",
    "B4": "silent empty result",
    "C1": "prompt injection in output",
    "C2": "poisoned tool description",
    "C3": "false claim in a document",
    "C4": "exfiltration instruction",
}


def fault_label(fault_id: str, scenario_id: str) -> str:
    """Ground-truth label of an injected call: ``"<fault id>:<scenario id>"``."""
    return f"{fault_id}:{scenario_id}"


#: Faults that are silent by definition (the result still looks like a valid answer): under a
#: declared output schema their faulted result must still conform, or the mcp client would
#: reject it and the fault would be a loud error instead.
SILENT_FAULTS: Final = frozenset({"B1", "B2", "B3", "B4", "C1", "C3", "C4"})
