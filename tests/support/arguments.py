"""Arguments a test sends to a scenario's tools. Imports nothing heavy: the instrumentation
tests use it at the floor versions, where only the instrumentation's dependencies exist."""

from __future__ import annotations

from typing import Any


def required_arguments(scenario: Any, tool: str) -> dict[str, Any]:
    """A value of the schema's type for every required argument of ``tool`` (what a test
    needs to make a call the fault proxy accepts)."""
    schema = scenario.tool(tool).input_schema
    samples = {"string": "x", "integer": 1, "number": 1.0, "array": ["a"], "boolean": True}
    props = schema.get("properties", {})
    return {
        n: samples.get(props.get(n, {}).get("type", "string"), "x")
        for n in schema.get("required", [])
    }
