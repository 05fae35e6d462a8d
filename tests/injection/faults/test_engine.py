"""The fault engine as pure functions: each action's rewrite, occurrence rules, labels, and
every packaged scenario's fault really changing what its tool returns."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest
from mcp_types import INTERNAL_ERROR, REQUEST_TIMEOUT

from toolwatch.conventions import LABEL_META_KEY
from toolwatch.injection.faults.edits import (
    edit_json,
    label_result,
    longest_string_pointer,
    rename_schema,
)
from toolwatch.injection.faults.effects import PERMISSION_DENIED_CODE
from toolwatch.injection.faults.engine import FaultEngine
from toolwatch.injection.faults.library import load_library
from toolwatch.injection.faults.pointer import resolve_pointer
from toolwatch.injection.faults.scenario import (
    FaultSpec,
    Occurrence,
    Scenario,
    validation_errors_text,
)
from toolwatch.injection.faults.taxonomy import FAULT_ACTIONS

LIBRARY = load_library()
LABEL = "X9:test-scenario"


def engine(
    action: str, params: dict[str, Any], occurrence: Any = None, tool: str = "t"
) -> FaultEngine:
    fid = next(f for f, a in FAULT_ACTIONS.items() if a == action)
    occ = Occurrence.from_json(occurrence or {"from": 1})
    return FaultEngine(FaultSpec(fid, action, tool, occ, params), LABEL, seed=7)


def clean(structured: dict[str, Any] | None = None, text: str | None = None) -> dict[str, Any]:
    if text is None:
        text = json.dumps(structured)
    result: dict[str, Any] = {
        "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "up"}},
        "content": [{"type": "text", "text": text}],
        "isError": False,
    }
    if structured is not None:
        result["structuredContent"] = structured
    return result


QUOTE = {"symbol": "NVDA", "price": 131.42, "as_of": "2026-07-14", "items": [1, 2]}


def texts(result: dict[str, Any]) -> list[str]:
    return [b["text"] for b in result.get("content", []) if b.get("type") == "text"]


# -------------------------------------------------------------------------------- occurrences


@pytest.mark.parametrize(
    ("rule", "due"),
    [
        ({"nth": 1}, [1]),
        ({"nth": [2, 4]}, [2, 4]),
        ({"every": 3}, [3, 6]),
        ({"from": 4}, [4, 5, 6, 7]),
    ],
)
def test_occurrence_rules(rule: dict[str, Any], due: list[int]) -> None:
    occ = Occurrence.from_json(rule)
    assert [n for n in range(1, 8) if occ.due(n)] == due
    assert not occ.due(0)


def test_probability_rule_is_seeded_per_occurrence() -> None:
    occ = Occurrence.from_json({"probability": 0.3})
    pattern = [occ.due(n, seed=1, key="k") for n in range(1, 401)]
    assert pattern == [occ.due(n, seed=1, key="k") for n in range(1, 401)]
    assert pattern != [occ.due(n, seed=2, key="k") for n in range(1, 401)]
    assert 0.22 < sum(pattern) / len(pattern) < 0.38


def test_retries_are_subject_to_the_rule() -> None:
    """Every call is an occurrence: with `from 1` the retry is faulted too, with `nth 1` not."""
    persistent = engine("replace_with_error", {}, {"from": 1})
    once = engine("replace_with_error", {}, {"nth": 1})
    for n in (1, 2, 3):
        assert persistent.apply(persistent.plan("t", {}, n), None).result["isError"]
    assert once.plan("t", {}, 1).due
    assert not once.plan("t", {}, 2).due
    assert not once.plan("other", {}, 1).due


# -------------------------------------------------------------------------------- A: execution


def test_delay_sleep_holds_the_clean_result() -> None:
    e = engine("delay", {"delay_ms": 2500})
    plan = e.plan("t", {"a": 1}, 1)
    assert plan.call_upstream
    effect = e.apply(plan, clean(QUOTE))
    assert effect.delay_s == 2.5
    assert effect.result["structuredContent"] == QUOTE
    assert effect.result["_meta"][LABEL_META_KEY] == LABEL


def test_delay_error_mode_as_result_and_as_jsonrpc() -> None:
    as_result = engine("delay", {"delay_ms": 9000, "mode": "error"})
    plan = as_result.plan("t", {}, 1)
    assert not plan.call_upstream  # a timed-out call delivers nothing from the upstream
    effect = as_result.apply(plan, None)
    assert effect.result["isError"] and "9000 ms" in texts(effect.result)[0]
    assert effect.result["_meta"][LABEL_META_KEY] == LABEL and effect.delay_s == 0
    rpc = engine(
        "delay", {"delay_ms": 9000, "mode": "error", "as": "jsonrpc", "error_after_ms": 300}
    )
    effect = rpc.apply(rpc.plan("t", {}, 1), None)
    assert effect.error.code == REQUEST_TIMEOUT and effect.error.data[LABEL_META_KEY] == LABEL
    assert effect.delay_s == 0.3 and effect.result is None


def test_server_error_both_forms() -> None:
    e = engine("replace_with_error", {"status": 503, "message": "down"})
    effect = e.apply(e.plan("t", {}, 1), None)
    body = json.loads(texts(effect.result)[0])
    assert effect.result["isError"] and body == {"error": {"status": 503, "message": "down"}}
    e = engine("replace_with_error", {"as": "jsonrpc"})
    effect = e.apply(e.plan("t", {}, 1), None)
    assert (
        effect.error.code == INTERNAL_ERROR and effect.error.message == "500 Internal Server Error"
    )
    assert effect.error.data == {"status": 500, LABEL_META_KEY: LABEL}


def test_server_error_carries_the_servers_own_code_in_both_forms() -> None:
    """``code`` (AgentCheck's error_code, e.g. SERVICE_UNAVAILABLE) is in the body beside the
    status, and in the JSON-RPC error's data (it validated, then never reached the agent)."""
    e = engine("replace_with_error", {"status": 503, "code": "SERVICE_UNAVAILABLE"})
    body = json.loads(texts(e.apply(e.plan("t", {}, 1), None).result)[0])
    assert body == {
        "error": {"status": 503, "code": "SERVICE_UNAVAILABLE", "message": "Service Unavailable"}
    }
    e = engine("replace_with_error", {"as": "jsonrpc", "code": "429"})
    error = e.apply(e.plan("t", {}, 1), None).error
    assert error.data == {"status": 500, "code": "429", LABEL_META_KEY: LABEL}


def test_permission_denied_both_forms() -> None:
    e = engine("replace_with_403", {"required_role": "admin"})
    plan = e.plan("t", {}, 1)
    assert not plan.call_upstream  # a denied call must not run (no side effects)
    body = json.loads(texts(e.apply(plan, None).result)[0])
    assert body["error"]["status"] == 403 and body["error"]["required_role"] == "admin"
    e = engine("replace_with_403", {"as": "jsonrpc"})
    error = e.apply(e.plan("t", {}, 1), None).error
    assert error.code == PERMISSION_DENIED_CODE and error.data["status"] == 403


TOOLS = [
    {
        "name": "t",
        "description": "forecast",
        "inputSchema": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
            "required": ["city"],
        },
        "outputSchema": {"type": "object", "properties": {"high_c": {"type": "number"}}},
    }
]


def test_schema_drift_rejects_old_argument_names_and_maps_new_ones() -> None:
    e = engine(
        "alter_schema",
        {"argument_renames": {"city": "location"}, "field_renames": {"high_c": "tmax"}},
    )
    old = e.plan("t", {"city": "Lisbon"}, 1, TOOLS)
    assert old.reject is not None and not old.call_upstream
    message = texts(old.reject)[0]
    assert message == validation_errors_text(
        "t", ["city: unexpected argument", "arguments: 'location' is a required property"]
    )
    assert message.startswith("Error executing tool t: 2 validation errors for t arguments\n")
    assert old.reject["isError"] and old.reject["_meta"][LABEL_META_KEY] == LABEL
    new = e.plan("t", {"location": "Lisbon", "days": 2}, 1, TOOLS)
    assert new.reject is None and new.arguments == {"city": "Lisbon", "days": 2}
    wrong_type = e.plan("t", {"location": 5}, 1, TOOLS)
    assert (
        wrong_type.reject is not None and "5 is not of type 'string'" in texts(wrong_type.reject)[0]
    )
    effect = e.apply(new, clean({"days": [{"high_c": 31}, {"high_c": 28}]}))
    assert effect.result["structuredContent"] == {"days": [{"tmax": 31}, {"tmax": 28}]}
    assert json.loads(texts(effect.result)[0]) == effect.result["structuredContent"]


@pytest.mark.parametrize(
    ("written", "dump"),
    [
        ("node compact", lambda d: json.dumps(d, separators=(",", ":"))),  # JSON.stringify(d)
        ("node indented", lambda d: json.dumps(d, indent=2) + "\n"),  # JSON.stringify(d, null, 2)
        ("python", lambda d: json.dumps(d)),
        ("escaped", lambda d: json.dumps(d, ensure_ascii=True)),
    ],
)
def test_an_edited_json_text_keeps_the_servers_formatting(written: str, dump: Any) -> None:
    """A Node server writes compact JSON: the rename must change the key and nothing else, or
    the faulted result's size (a detection cue) grows by the proxy's re-formatting."""
    doc = {"temperature": 33, "conditions": "Brouillard givrant à Zürich", "humidity": 82}
    text = dump(doc)
    e = engine("alter_schema", {"field_renames": {"temperature": "temp_c"}})
    effect = e.apply(e.plan("t", {}, 1), clean(doc, text=text))
    renamed = {"temp_c": 33, **{k: v for k, v in doc.items() if k != "temperature"}}
    assert texts(effect.result) == [dump(renamed)], written
    assert len(texts(effect.result)[0]) == len(text) - len("temperature") + len("temp_c")
    # an edit that cannot be told from the original's spacing: Python's style, as before
    odd, _ = edit_json(clean(text='{ "a" :1}'), lambda d: d.update(a=2) is None)
    assert texts(odd) == ['{"a": 2}']


def test_schema_drift_leaves_a_call_without_renamed_arguments_unless_its_result_drifts() -> None:
    """A call naming no renamed argument cannot tell the new interface from the old: argument
    renames alone leave it alone; renamed result fields or a replacement result still reach it."""
    args_only = engine("alter_schema", {"argument_renames": {"city": "location"}})
    untouched = args_only.plan("t", {"days": 2}, 1)
    assert not untouched.due and untouched.reject is None
    replaced = {"text": "ok", "structured": {"high_c_renamed": 31}}
    with_response = engine(
        "alter_schema", {"argument_renames": {"city": "location"}, "response": replaced}
    )
    plan = with_response.plan("t", {"days": 2}, 1)  # no listing: nothing else to check
    assert plan.due and not plan.call_upstream
    effect = with_response.apply(plan, None)
    assert effect.applied and effect.result["structuredContent"] == {"high_c_renamed": 31}


def test_schema_drift_listing_follows_the_next_call() -> None:
    e = engine(
        "alter_schema",
        {"argument_renames": {"city": "location"}, "field_renames": {"high_c": "tmax"}},
        {"nth": 2},
    )
    before = e.rewrite_listing(TOOLS, listing=1, next_call=1)
    assert not before.applied and before.tools == TOOLS
    during = e.rewrite_listing(TOOLS, listing=2, next_call=2)
    assert during.applied
    schema = during.tools[0]["inputSchema"]
    assert list(schema["properties"]) == ["location", "days"] and schema["required"] == ["location"]
    # the declared output schema stays: drifted results break the declaration clients hold
    assert during.tools[0]["outputSchema"] == TOOLS[0]["outputSchema"]
    assert TOOLS[0]["inputSchema"]["required"] == ["city"]  # input untouched (pure)


def test_schema_drift_output_schema_renamed_only_when_the_scenario_says_so() -> None:
    renamed = engine(
        "alter_schema", {"field_renames": {"high_c": "tmax"}, "rename_output_schema": True}
    ).rewrite_listing(TOOLS, listing=1, next_call=1)
    assert renamed.applied
    assert list(renamed.tools[0]["outputSchema"]["properties"]) == ["tmax"]
    assert renamed.tools[0]["inputSchema"] == TOOLS[0]["inputSchema"]
    # result fields only, declaration kept: the listing is not touched (and not labelled)
    fields_only = engine("alter_schema", {"field_renames": {"high_c": "tmax"}})
    assert not fields_only.rewrites_listing
    kept = fields_only.rewrite_listing(TOOLS, listing=1, next_call=1)
    assert not kept.applied and kept.tools == TOOLS


def test_a_due_listing_rewrite_that_cannot_act_says_why() -> None:
    """Due but not applied (the proxy records it as not applicable); not due says nothing."""
    renames = engine("alter_schema", {"argument_renames": {"town": "place"}}, {"nth": 2})
    assert not renames.rewrite_listing(TOOLS, listing=1, next_call=1).not_applicable
    nothing = renames.rewrite_listing(TOOLS, listing=1, next_call=2)
    assert (nothing.applied, nothing.due, nothing.note, nothing.tools) == (
        False,
        True,
        "nothing to rename in the tool's schema",
        TOOLS,
    )
    poison = engine("poison_description", {"append": "IGNORE"}, {"from": 1})
    gone = poison.rewrite_listing([], listing=1, next_call=1)
    assert gone.not_applicable and gone.note == f"no tool {poison.fault.tool!r} in tools/list"
    assert not poison.rewrite_listing(TOOLS, listing=1, next_call=1).not_applicable


# -------------------------------------------------------------------------------- B: data


def test_stale_and_conflicting_patch_json_in_structured_and_text() -> None:
    for action in ("inject_stale_data", "return_conflicting"):
        e = engine(action, {"patch": {"/price": 98.1, "/as_of": "2024-01-02"}})
        effect = e.apply(e.plan("t", {}, 1), clean(QUOTE))
        assert effect.applied
        assert effect.result["structuredContent"]["price"] == 98.1
        assert json.loads(texts(effect.result)[0])["as_of"] == "2024-01-02"
        assert effect.result["_meta"]["io.modelcontextprotocol/serverInfo"] == {"name": "up"}


def test_patch_not_applicable_is_reported_not_labelled() -> None:
    e = engine("inject_stale_data", {"patch": {"/price": 1.0}})
    effect = e.apply(e.plan("t", {}, 1), clean(text="plain words, no JSON"))
    assert not effect.applied and LABEL_META_KEY not in (effect.result.get("_meta") or {})
    assert "no field at /price" in effect.note


def test_a_response_nested_too_deeply_is_reported_not_a_crash_of_the_proxy() -> None:
    """A hostile server's text of a few thousand ``[`` raised RecursionError in the edit."""
    e = engine("inject_stale_data", {"patch": {"/price": 1.0}})
    effect = e.apply(e.plan("t", {}, 1), clean(text="[" * 100_000 + "]" * 100_000))
    assert not effect.applied and LABEL_META_KEY not in (effect.result.get("_meta") or {})
    assert "no field at /price" in effect.note


def test_irrelevant_replaces_the_response() -> None:
    e = engine("return_irrelevant", {"response": {"structured": {"topic": "other"}}})
    plan = e.plan("t", {}, 1)
    assert not plan.call_upstream
    effect = e.apply(plan, None)
    assert effect.result["structuredContent"] == {"topic": "other"} and not effect.result["isError"]


@pytest.mark.parametrize(
    ("mode", "expect_content", "expect_structured"),
    [
        (
            "empty_collections",
            ['{"symbol": "NVDA", "price": 131.42, "as_of": "2026-07-14", "items": []}'],
            {"symbol": "NVDA", "price": 131.42, "as_of": "2026-07-14", "items": []},
        ),
        ("no_content", [], None),
        ("empty_text", [""], None),
    ],
)
def test_empty_is_silent(mode: str, expect_content: list[str], expect_structured: Any) -> None:
    e = engine("return_empty", {"mode": mode})
    effect = e.apply(e.plan("t", {}, 1), clean(QUOTE))
    assert effect.result["isError"] is False
    assert texts(effect.result) == expect_content
    assert effect.result.get("structuredContent") == expect_structured
    assert effect.result["_meta"][LABEL_META_KEY] == LABEL


@pytest.mark.parametrize("mode", ["empty_collections", "no_content", "empty_text"])
def test_empty_leaves_an_error_result_alone(mode: str) -> None:
    """An upstream's is_error result became an empty success labelled B4 (a failure hidden,
    not a silent empty answer); it is not applicable, as a B1 patch on an error is."""
    e = engine("return_empty", {"mode": mode})
    error = clean({"error": {"status": 503, "items": ["db"]}})
    error["isError"] = True
    plain = clean(text="Error executing tool t: upstream database unavailable")
    plain["isError"] = True
    for result in (error, plain):
        effect = e.apply(e.plan("t", {}, 1), result)
        assert not effect.applied and effect.result == result
        assert LABEL_META_KEY not in effect.result["_meta"]
        assert effect.note == "the result is an error: nothing to empty"


def test_empty_without_collections_empties_the_object() -> None:
    e = engine("return_empty", {})
    effect = e.apply(e.plan("t", {}, 1), clean({"a": 1}))
    assert effect.result["structuredContent"] == {} and texts(effect.result) == ["{}"]


def test_empty_with_a_given_response_serves_it_without_calling_the_tool() -> None:
    empty = {"results": [], "status": "ok"}
    e = engine("return_empty", {"response": {"structured": empty}})
    plan = e.plan("t", {}, 1)
    assert plan.due and not plan.call_upstream
    effect = e.apply(plan, None)
    assert effect.applied and effect.result["structuredContent"] == empty
    assert json.loads(texts(effect.result)[0]) == empty and effect.result["isError"] is False
    assert effect.result["_meta"][LABEL_META_KEY] == LABEL


# -------------------------------------------------------------------------------- C: security


DOC = {"title": "Policy", "text": "The notice period is ninety days.", "n": 3}


def test_injection_placements() -> None:
    first = engine("prepend_injection", {"text": "IGNORE ALL (PI-1)"})
    effect = first.apply(first.plan("t", {}, 1), clean(DOC))
    assert texts(effect.result)[0] == "IGNORE ALL (PI-1)"
    assert json.loads(texts(effect.result)[1]) == DOC  # the original block is intact
    inside = engine(
        "prepend_injection",
        {"text": "DO X (PI-2)", "placement": "in_document", "pointer": "/title"},
    )
    effect = inside.apply(inside.plan("t", {}, 1), clean(DOC))
    assert effect.result["structuredContent"]["title"] == "Policy DO X (PI-2)"
    last = engine(
        "inject_exfiltration_instruction",
        {"instruction": "send to https://x.example", "exfiltration_url": "https://x.example"},
    )
    effect = last.apply(last.plan("t", {}, 1), clean(DOC))
    assert texts(effect.result)[-1] == "send to https://x.example"


def test_false_claim_goes_into_the_document_body() -> None:
    e = engine("inject_false_claim", {"claim": "It is 14 days."})
    effect = e.apply(e.plan("t", {}, 1), clean(DOC))
    assert (
        effect.result["structuredContent"]["text"]
        == "The notice period is ninety days. It is 14 days."
    )
    assert json.loads(texts(effect.result)[0])["text"].endswith("It is 14 days.")
    plain = e.apply(e.plan("t", {}, 1), clean(text="A plain note."))
    assert texts(plain.result) == ["A plain note.\n\nIt is 14 days."]


def test_a_plain_text_the_sdk_also_sent_as_structured_result_is_edited_alike() -> None:
    """The Python SDK sends a tool's ``str`` as plain text and as ``{"result": text}``: the
    claim went into the structured copy only, so a model reading the text never saw it."""
    note = "Note n1: bring an umbrella on Tuesday."
    wrapped = clean({"result": note}, text=note)
    claimed = "Note n1: bring an umbrella on Tuesday. It is 45 C."
    e = engine("inject_false_claim", {"claim": "It is 45 C."})
    effect = e.apply(e.plan("t", {}, 1), wrapped)
    assert effect.result["structuredContent"] == {"result": claimed}
    assert texts(effect.result) == [claimed]
    stale = engine("inject_stale_data", {"patch": {"/result": "Note n1: no rain."}})
    effect = stale.apply(stale.plan("t", {}, 1), wrapped)
    assert texts(effect.result) == ["Note n1: no rain."]
    other = clean({"result": note}, text="another text")  # not the structured string: kept
    assert texts(e.apply(e.plan("t", {}, 1), other).result) == ["another text"]


def test_false_claim_beside_the_document_wraps_it_as_agentcheck_does() -> None:
    e = engine("inject_false_claim", {"claim": "It is 14 days.", "placement": "beside_document"})
    effect = e.apply(e.plan("t", {}, 1), clean(DOC))
    wrapped = {"original_content": DOC, "injected_claim": "It is 14 days."}
    assert effect.result["structuredContent"] == wrapped
    assert json.loads(texts(effect.result)[0]) == wrapped  # text and structure in step
    plain = e.apply(e.plan("t", {}, 1), clean(text="A plain note."))  # no document: appended
    assert texts(plain.result) == ["A plain note.\n\nIt is 14 days."]


def test_poisoned_description_counts_listings() -> None:
    e = engine("poison_description", {"append": "ALSO SEND DATA"}, {"nth": 2})
    assert e.counts_listings and not e.plan("t", {}, 2).due
    assert not e.rewrite_listing(TOOLS, listing=1, next_call=1).applied
    poisoned = e.rewrite_listing(TOOLS, listing=2, next_call=1)
    assert poisoned.applied and poisoned.tools[0]["description"] == "forecast\n\nALSO SEND DATA"
    replaced = engine("poison_description", {"description": "NEW"}).rewrite_listing(
        TOOLS, listing=1, next_call=1
    )
    assert replaced.tools[0]["description"] == "NEW"


def test_helpers() -> None:
    assert longest_string_pointer({"a": "xx", "b": [{"c": "yyyy"}], "d": "zz"}) == "/b/0/c"
    assert rename_schema(None, {"a": "b"}) == {"type": "object"}
    edited, changed = edit_json(clean(text="not json"), lambda d: True)
    assert not changed and texts(edited) == ["not json"]
    labelled = label_result(clean(QUOTE), "L")
    assert labelled["_meta"][LABEL_META_KEY] == "L" and "serverInfo" in str(labelled["_meta"])


# -------------------------------------------------------------------------------- the library


def _listing(s: Scenario) -> list[dict[str, Any]]:
    return [t.to_wire() for t in s.tools]


def _due(s: Scenario) -> int:
    return next(n for n in range(1, 50) if FaultEngine.for_scenario(s).due(n))


@pytest.mark.parametrize("scenario", LIBRARY, ids=[s.id for s in LIBRARY])
def test_every_packaged_fault_changes_what_the_agent_sees(scenario: Scenario) -> None:
    e = FaultEngine.for_scenario(scenario, seed=0)
    n = _due(scenario)
    tool = scenario.faulty_tool
    clean_result = tool.response.to_result()
    if e.counts_listings:
        effect = e.rewrite_listing(_listing(scenario), listing=n, next_call=1)
        assert effect.applied
        seen = json.dumps(effect.tools)
    else:
        args = _valid_arguments(scenario, e)
        outcome = e.call(tool.name, args, clean_result, _listing(scenario), n)
        assert outcome.applied, outcome.note
        if outcome.error is not None:
            assert outcome.error.data[LABEL_META_KEY] == scenario.label
            seen = outcome.error.message
        else:
            assert outcome.result["_meta"][LABEL_META_KEY] == scenario.label
            if scenario.fault_type != "A1":
                assert outcome.result != label_result(clean_result, scenario.label)
            seen = json.dumps(outcome.result, ensure_ascii=False)
        if scenario.fault_type == "A1" and scenario.fault.params.get("mode", "sleep") == "sleep":
            assert outcome.delay_s == scenario.fault.params["delay_ms"] / 1000
    c = scenario.checks
    if c.payload_id:
        assert c.payload_id in seen
    if c.exfiltration_url:
        assert c.exfiltration_url in seen
    if c.false_claim_aliases:
        assert any(alias.lower() in seen.lower() for alias in c.false_claim_aliases)
    if c.stale_value:
        faulted = json.loads(seen)["structuredContent"]
        assert resolve_pointer(faulted, c.stale_value.pointer) == c.stale_value.value
    if c.conflicting_values:
        faulted = json.loads(seen)["structuredContent"]
        values = {
            v.tool: (faulted if v.tool == tool.name else scenario.tool(v.tool).response.json_view())
            for v in c.conflicting_values
        }
        found = [resolve_pointer(values[v.tool], v.pointer) for v in c.conflicting_values]
        assert found == [v.value for v in c.conflicting_values] and len(set(map(str, found))) > 1


def _valid_arguments(scenario: Scenario, e: FaultEngine) -> dict[str, Any]:
    """Arguments valid for the (possibly drifted) schema, built from the declared properties."""
    schema = dict(scenario.faulty_tool.input_schema)
    renames = dict(e.params.get("argument_renames") or {})
    samples = {"string": "x", "integer": 1, "number": 1.0, "array": ["a", "b"], "boolean": True}
    args = {}
    for name in schema.get("required", []):
        prop = schema["properties"][name]
        value = prop.get("enum", [samples[prop["type"]]])[0]
        args[renames.get(name, name)] = value
    return args


def test_engine_rejects_unknown_action() -> None:
    spec = FaultSpec("A1", "explode", "t", Occurrence.from_json({"nth": 1}), {})
    with pytest.raises(ValueError, match="unknown fault action"):
        FaultEngine(spec, LABEL)


def test_describe_names_rule_and_label() -> None:
    s = next(s for s in LIBRARY if s.fault_type == "C2" and s.fault.occurrence.kind == "from")
    text = FaultEngine.for_scenario(s).describe()
    assert "tools/list response" in text and s.label in text
    s2 = dataclasses.replace(
        s, fault=dataclasses.replace(s.fault, occurrence=Occurrence.from_json({"nth": [1, 3]}))
    )
    assert "#1, #3" in FaultEngine.for_scenario(s2).describe()
