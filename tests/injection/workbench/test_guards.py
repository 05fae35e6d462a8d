"""What a mitigation must have done for a pass to count as its fix (guards.acted_on_fault)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from support.workbench import scenario, trajectory
from toolwatch.injection.mitigations.wrapper import MitigationEvent
from toolwatch.injection.workbench.guards import acted_on_fault


@pytest.mark.parametrize(
    ("tool", "detail"),
    [
        ("文書検索", "fresher than 文書検索の結果 at step 0"),
        ("поиск_документов", "fresher than поиск_документов at step 0"),
        ("search_docs", "fresher than search_docs at step 0"),
    ],
)
def test_an_event_naming_the_faulty_tool_in_any_script_acted_on_the_fault(
    tool: str, detail: str
) -> None:
    """A verifier's flag raised on one result names the stale one it compared it with; the
    name was read only between word boundaries, so a faulty tool named in a script without
    spaces ("文書検索の結果") was not named and the flag did not count as acting on the fault;
    a name is now read as a whole in any script (acts.mention), never inside a longer one."""
    sc = scenario("A1")
    sc = replace(sc, fault=replace(sc.fault, tool=tool))
    run = trajectory(sc.id, [], "Done.")
    run.mitigation_events.append(MitigationEvent("verifier", "value_flagged", "get_doc", detail))
    assert acted_on_fault(sc, run) == ["verifier value_flagged on get_doc"]
    run.mitigation_events[0] = MitigationEvent(
        "verifier", "value_flagged", "get_doc", detail.replace(tool, f"{tool}_v2")
    )
    assert acted_on_fault(sc, run) == []
