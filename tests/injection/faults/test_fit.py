"""A scenario's fault against a real upstream's listing: a tool it does not list, an A4 rename
of an argument it does not declare, a silent fault its output schema rejects — each a problem
at the scenario field, so the proxy refuses instead of proxying unchanged."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from toolwatch.injection.faults.fit import upstream_problems
from toolwatch.injection.faults.library import find_scenario, load_library
from toolwatch.injection.faults.scenario import Scenario


def listing(scenario: Scenario) -> list[dict[str, Any]]:
    """The scenario's own tools as ``tools/list`` announces them."""
    return [t.to_wire() for t in scenario.tools]


def with_params(scenario_id: str, **params: Any) -> Scenario:
    s = find_scenario(scenario_id)
    return dataclasses.replace(s, fault=dataclasses.replace(s.fault, params=params))


@pytest.mark.parametrize("scenario", load_library(), ids=lambda s: s.id)
def test_every_packaged_scenario_fits_its_own_tools(scenario: Scenario) -> None:
    assert upstream_problems(scenario, listing(scenario), "up") == []


def test_a_tool_the_upstream_does_not_list() -> None:
    s = find_scenario("a3-ops-01")
    other = find_scenario("a1-finance-01")
    (problem,) = upstream_problems(s, listing(other), "srv")
    assert problem.pointer == "/fault/tool"
    names = ", ".join(sorted(t.name for t in other.tools))
    assert problem.message == (
        f"upstream srv lists no tool 'restart_service' (it lists: {names}): "
        "the fault could never fire"
    )


def test_a4_rename_of_an_argument_the_upstream_tool_lacks() -> None:
    s = find_scenario("a4-finance-01")  # renames fiscal_year -> year
    tools = listing(s)
    tools[0]["inputSchema"] = {"type": "object", "properties": {"symbol": {}, "fy": {}}}
    (problem,) = upstream_problems(s, tools, "srv")
    assert problem.pointer == "/fault/params/argument_renames/fiscal_year"
    assert problem.message == (
        "tool 'get_company_financials' of upstream srv has no argument 'fiscal_year' "
        "(it has: symbol, fy): the rename could never apply"
    )
    tools[0]["inputSchema"] = {"type": "object", "properties": {"fiscal_year": {}, "year": {}}}
    (problem,) = upstream_problems(s, tools, "srv")
    assert problem.message.endswith("already has an argument 'year'")


def test_a_silent_fault_the_upstreams_output_schema_rejects() -> None:
    s = find_scenario("b3-travel-01")  # the upstream declares get_flight_status's schema
    text_only = with_params("b3-travel-01", response={"text": "Top 10 pasta recipes"})
    (problem,) = upstream_problems(text_only, listing(s), "srv")
    assert problem.pointer == "/fault/params"
    assert "declares an outputSchema for 'get_flight_status'" in problem.message
    assert "without structured content" in problem.message
    wrong = with_params("b3-travel-01", response={"structured": {"recipes": ["pasta"]}})
    (problem,) = upstream_problems(wrong, listing(s), "srv")
    assert problem.pointer == "/fault/params/response/structured"
    assert "is a required property" in problem.message
    # B4 without content breaks it too; with no output schema declared, nothing is rejected
    empty = dataclasses.replace(
        s,
        fault_type="B4",
        fault=dataclasses.replace(s.fault, action="return_empty", params={"mode": "no_content"}),
    )
    assert [p.pointer for p in upstream_problems(empty, listing(s), "srv")] == ["/fault/params"]
    bare = [{**t, "outputSchema": None} for t in listing(s)]
    assert upstream_problems(text_only, bare, "srv") == []
