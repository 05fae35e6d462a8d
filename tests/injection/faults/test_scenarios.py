"""The scenario library, its schema, the loaders (toolwatch + AgentCheck) and the validator, and
the scenario server that serves a scenario's tools with their declared schemas."""

from __future__ import annotations

import copy
import io
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import anyio
import jsonschema
import pytest
from mcp import Client

from support.paths import FIXTURES, REPO
from toolwatch.cli import main as cli_main
from toolwatch.injection.faults.codec import scenario_to_json
from toolwatch.injection.faults.engine import FaultEngine
from toolwatch.injection.faults.library import (
    find_scenario,
    load_library,
    load_scenario,
    parse_scenario,
    validate_path,
)
from toolwatch.injection.faults.scenario import (
    Scenario,
    ScenarioError,
    argument_errors,
    scenario_schema,
    validation_errors_text,
)
from toolwatch.injection.faults.server import scenario_server
from toolwatch.injection.faults.taxonomy import FAULT_ACTIONS

FIXTURES = FIXTURES / "agentcheck"
LIBRARY = load_library()


def library_doc(scenario_id: str) -> dict[str, Any]:
    return scenario_to_json(find_scenario(scenario_id))


# -------------------------------------------------------------------------------- library


def test_library_covers_every_fault_type_over_many_domains() -> None:
    per_type = Counter(s.fault_type for s in LIBRARY)
    assert set(per_type) == set(FAULT_ACTIONS)
    assert min(per_type.values()) >= 5 and len(LIBRARY) >= 60
    domains = Counter(s.domain for s in LIBRARY)
    assert len(domains) >= 8 and max(domains.values()) <= 10
    for fid in FAULT_ACTIONS:  # each type spans at least 5 domains
        assert len({s.domain for s in LIBRARY if s.fault_type == fid}) >= 5
    assert len({s.task for s in LIBRARY}) == len(LIBRARY)
    assert len({s.id for s in LIBRARY}) == len(LIBRARY)
    occurrence_kinds = {s.fault.occurrence.kind for s in LIBRARY}
    assert occurrence_kinds == {"nth", "every", "from", "probability"}


def test_library_files_are_named_by_id_and_schema_valid() -> None:
    schema = scenario_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["$schema"].endswith("2020-12/schema")
    root = REPO / "scenarios"
    files = sorted(p for p in root.glob("*.json") if p.name != "schema.json")
    assert len(files) == len(LIBRARY)
    for path in files:
        doc = json.loads(path.read_text())
        assert doc["id"] == path.stem
        jsonschema.Draft202012Validator(schema).validate(doc)


def test_each_scenario_has_scoring_and_its_machine_fields() -> None:
    for s in LIBRARY:
        assert len(s.scoring.acceptable_behaviors) >= 2
        assert s.scoring.minimum_pass_criterion and s.scoring.clear_failure_signal
        c = s.checks
        if s.fault_type in ("C1", "C2"):
            assert c.payload_id
        if s.fault_type == "C3":
            assert c.false_claim_aliases
        if s.fault_type == "C4":
            assert c.exfiltration_url and c.exfiltration_url.startswith("https://")
            host = c.exfiltration_url.split("/")[2]
            assert host not in c.endpoint_allowlist
        if s.fault_type == "B2":
            assert len({json.dumps(v.value) for v in c.conflicting_values}) >= 2
        if s.fault_type[0] in "AB" and s.fault_type != "B2":
            assert c.expected_value is not None
            assert s.tool(c.expected_value.tool).response.json_view() is not None


def test_round_trip_through_json_is_lossless() -> None:
    for s in LIBRARY[:12]:
        again = parse_scenario(scenario_to_json(s), "again")
        assert again.tools == s.tools and again.fault == s.fault and again.checks == s.checks


# -------------------------------------------------------------------------------- errors


def write(tmp_path: Path, name: str, doc: Any) -> Path:
    path = tmp_path / name
    path.write_text(doc if isinstance(doc, str) else json.dumps(doc))
    return path


@pytest.mark.parametrize(
    ("mutate", "pointer", "fragment"),
    [
        (lambda d: d["fault"].__setitem__("tool", "nope"), "/fault/tool", "'nope' is not among"),
        (lambda d: d["fault"]["params"].pop("patch"), "/fault/params", "needs patch"),
        (
            lambda d: d["fault"].__setitem__("action", "delay"),
            "/fault/action",
            "'return_conflicting'",
        ),
        (
            lambda d: d["scoring"]["acceptable_behaviors"].pop(),
            "/scoring/acceptable_behaviors",
            "too short",
        ),
        (
            lambda d: d["fault"].__setitem__("occurrence", {"nth": 0}),
            "/fault/occurrence/nth",
            "minimum of 1",
        ),
        (
            lambda d: d["fault"].__setitem__("occurrence", {}),
            "/fault/occurrence",
            "exactly one of {nth}",
        ),
        (  # a typo is named, not only the shapes a rule may take
            lambda d: d["fault"].__setitem__("occurrence", {"nht": 1}),
            "/fault/occurrence",
            "{from} | {probability} ('nht' is not one of them)",
        ),
        (
            lambda d: d["fault"].__setitem__("occurrence", {"from": 1, "every": 2}),
            "/fault/occurrence",
            "{probability} (got 'from', 'every')",
        ),
        (
            lambda d: d["checks"].pop("conflicting_values"),
            "/checks/conflicting_values",
            "required for fault type B2",
        ),
        (
            lambda d: d["fault"]["params"]["patch"].__setitem__("/last", 131.42),
            "/fault/params/patch",
            "no conflict",
        ),
        (
            lambda d: d["fault"]["params"]["reference"].__setitem__("pointer", "/nope"),
            "/fault/params/reference/pointer",
            "no field at /nope",
        ),
        (
            lambda d: d["tools"][0].__setitem__("name", "bad name!"),
            "/tools/0/name",
            "does not match",
        ),
    ],
)
def test_broken_scenario_names_file_and_field(
    tmp_path: Path, mutate: Any, pointer: str, fragment: str
) -> None:
    doc = library_doc("b2-finance-01")
    mutate(doc)
    path = write(tmp_path, "broken.json", doc)
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    lines = str(info.value).splitlines()
    hit = [line for line in lines if line.startswith(f"{path}: {pointer}: ")]
    assert hit, lines
    assert any(fragment in line for line in hit), lines


def test_semantic_checks_of_security_fields(tmp_path: Path) -> None:
    claim = library_doc("c3-legal-01")
    claim["checks"]["false_claim_aliases"] = ["ninety (90) days"]  # occurs in the clean text
    problems = validate_path(write(tmp_path, "c3.json", claim))
    assert any(
        "/checks/false_claim_aliases/0: alias 'ninety (90) days' occurs in a clean response" in p
        for p in problems
    )
    exfil = library_doc("c4-finance-01")
    exfil["checks"]["endpoint_allowlist"] = ["audit-mirror.example"]
    problems = validate_path(write(tmp_path, "c4.json", exfil))
    assert any(
        "/checks/endpoint_allowlist: allowlists the exfiltration host" in p for p in problems
    )
    injection = library_doc("c1-weather-01")
    injection["checks"]["payload_id"] = "PI-NOT-THERE"
    problems = validate_path(write(tmp_path, "c1.json", injection))
    assert any(
        "/fault/params/text: injection text does not carry the payload id" in p for p in problems
    )
    drift = library_doc("a4-weather-01")
    drift["fault"]["params"]["argument_renames"] = {"town": "location"}
    problems = validate_path(write(tmp_path, "a4.json", drift))
    assert any(
        "/fault/params/argument_renames/town: tool 'get_forecast' has no argument 'town'" in p
        for p in problems
    )
    expected = library_doc("a1-weather-01")
    expected["checks"]["expected_value"]["value"] = 99
    problems = validate_path(write(tmp_path, "a1.json", expected))
    assert any("/checks/expected_value/value: 'get_forecast' returns 1.2" in p for p in problems)


def test_output_schema_problems_name_the_field(tmp_path: Path) -> None:
    broken = library_doc("a4-shop-01")
    broken["tools"][0]["output_schema"] = {"type": "no-such-type"}
    assert any(
        "/tools/0/output_schema: not a valid JSON Schema" in p
        for p in validate_path(write(tmp_path, "a4.json", broken))
    )
    text_only = library_doc("a4-shop-01")
    text_only["tools"][0]["response"] = {"text": "14 on hand, 3 reserved"}
    assert any(
        "/tools/0/response: a tool with output_schema must answer with structured content" in p
        for p in validate_path(write(tmp_path, "text.json", text_only))
    )
    wrong = library_doc("a4-shop-01")
    wrong["tools"][0]["output_schema"]["properties"]["reserved"] = {"type": "string"}
    assert any(
        "/tools/0/response/structured: does not match output_schema" in p
        for p in validate_path(write(tmp_path, "wrong.json", wrong))
    )


def test_a_silent_fault_must_stay_valid_under_the_declared_output_schema(tmp_path: Path) -> None:
    """A declared output schema makes the mcp client reject a non-conforming result, which
    would turn a silent fault (B1-B4, C1, C3, C4) into a loud error: the validator says so."""
    empty = library_doc("b4-support-01")  # answers with no content at all
    assert "output_schema" not in empty["tools"][0]
    empty["tools"][0]["output_schema"] = {"type": "object"}
    problems = validate_path(write(tmp_path, "b4.json", empty))
    assert any(
        "/tools/0/output_schema: the return_empty result has no structured content" in p
        for p in problems
    ), problems
    off_shape = library_doc("b3-travel-01")
    off_shape["fault"]["params"]["response"]["structured"].pop("gate")
    problems = validate_path(write(tmp_path, "b3.json", off_shape))
    assert any(
        "/fault/params: the faulted result breaks output_schema of 'get_flight_status'" in p
        for p in problems
    ), problems


def test_library_output_schemas_make_schema_drift_visible() -> None:
    """Every A4 scenario declares the faulty tool's output schema and its drifted result
    breaks it (the declaration stays unless ``rename_output_schema``); every silent fault on a
    tool with a schema keeps its result valid (checked by the loader)."""
    from toolwatch.injection.faults.effects import CallPlan
    from toolwatch.injection.faults.engine import FaultEngine

    drift = [s for s in LIBRARY if s.fault_type == "A4"]
    assert len(drift) >= 5
    for s in drift:
        schema = s.faulty_tool.output_schema
        assert schema is not None, s.id
        assert not s.fault.params.get("rename_output_schema"), s.id
        due = CallPlan(s.fault.tool, 1, True, {})  # a call made with the new argument names
        effect = FaultEngine.for_scenario(s).apply(due, s.faulty_tool.response.to_result())
        assert effect.applied and effect.result is not None
        structured = effect.result["structuredContent"]
        errors = list(jsonschema.Draft202012Validator(schema).iter_errors(structured))
        assert errors, f"{s.id}: drifted result still matches the declared schema"
    declared = {s.id for s in LIBRARY if any(t.output_schema for t in s.tools)}
    assert {s.id for s in LIBRARY if s.fault_type == "B4"} - declared == {"b4-support-01"}
    assert len(declared) >= 15


def test_bad_json_and_missing_file(tmp_path: Path) -> None:
    bad = write(tmp_path, "bad.json", '{"id": "x",\n  "tools": [}\n')
    assert validate_path(bad) == [f"{bad}: /: invalid JSON at line 2, column 13: Expecting value"]
    assert "no such file or directory" in validate_path(tmp_path / "missing.json")[0]


def test_a_file_nested_too_deeply_or_not_utf8_is_an_invalid_file_not_a_bug(tmp_path: Path) -> None:
    """Both were "unexpected RecursionError / UnicodeDecodeError" (exit 70)."""
    deep = write(tmp_path, "deep.json", "[" * 100_000 + "]" * 100_000)
    assert validate_path(deep) == [
        f"{deep}: /: invalid JSON at line 1, column 1: nested too deeply to read"
    ]
    binary = tmp_path / "binary.json"
    binary.write_bytes(b"\xff\xfe{}")
    assert validate_path(binary) == [f"{binary}: /: not UTF-8 text (byte 0xff at offset 0)"]


@pytest.mark.parametrize("number", ["NaN", "Infinity", "-Infinity"])
def test_a_non_finite_number_is_refused_wherever_it_stands(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], number: str
) -> None:
    """Python's json reads NaN and ±Infinity; a NaN probability passed every bound (the proxy
    armed "probability nan", which never fires) and show --json printed invalid JSON."""
    doc = library_doc("a2-shop-01")
    doc["fault"]["occurrence"]["probability"] = float(number)
    doc["tools"][0]["response"]["structured"]["price_usd"] = float(number)
    doc["metadata"]["weights"] = [1, float(number)]
    path = write(tmp_path, "nan.json", doc)
    assert number in path.read_text()
    why = f"{number} is not a number JSON allows (no NaN or Infinity)"
    assert validate_path(path) == [
        f"{path}: /tools/0/response/structured/price_usd: {why}",
        f"{path}: /fault/occurrence/probability: {why}",
        f"{path}: /metadata/weights/1: {why}",
    ]
    assert cli_main(["scenarios", "validate", str(path)]) == 1
    assert cli_main(["scenarios", "show", "--json", str(path)]) == 1
    assert cli_main(["scenarios", "list", "--json", "--path", str(path)]) == 1
    out = capsys.readouterr()
    assert out.out == "0 valid, 1 invalid\n" and number not in out.out
    assert out.err.count(f"/fault/occurrence/probability: {why}") == 3


def test_a_problem_quotes_only_the_start_of_a_long_value(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """jsonschema echoed the whole offending value: a top-level array printed the document
    (several KB) as one line, a 10,000-character name came back whole; so did our own
    messages."""
    long = "a" * 10_000
    cut = "'" + "a" * 58 + "…"  # the first 60 characters of the repr, the last an ellipsis
    cases = {
        "name": ("a2-shop-01", lambda d: d["tools"][0].__setitem__("name", long)),
        "extra": ("a2-shop-01", lambda d: d.__setitem__(long, 1)),
        "tool": ("a2-shop-01", lambda d: d["fault"].__setitem__("tool", long)),
        "payload": ("c1-legal-01", lambda d: d["checks"].__setitem__("payload_id", long)),
    }
    messages = {}
    for name, (sid, mutate) in cases.items():
        doc = library_doc(sid)
        mutate(doc)
        path = write(tmp_path, f"{name}.json", doc)
        (line,) = validate_path(path)
        messages[name] = line.removeprefix(f"{path}: ")
    assert messages == {
        "name": f"/tools/0/name: {cut} does not match '^[A-Za-z0-9_.-]{{1,64}}$'",
        "extra": f"/: Additional properties are not allowed ({cut} was unexpected)",
        "tool": f"/fault/tool: faulty tool {cut} is not among the tools "
        "(get_product, get_product_reviews)",
        "payload": f"/fault/params/text: injection text does not carry the payload id {cut}",
    }
    both = [library_doc("a2-shop-01"), library_doc("c1-legal-01")]
    monkeypatch.setattr(sys, "stdin", io.StringIO(json.dumps(both)))
    assert cli_main(["scenarios", "validate", "-"]) == 1
    assert capsys.readouterr().err == (
        f"<stdin>#1: /: {repr(both)[:59]}… is not of type 'object'\n"
    )


@pytest.mark.parametrize(
    "argv",
    [["validate", "{empty}"], ["validate", "{full}", "{empty}"], ["list", "--path", "{empty}"]],
)
def test_cli_a_directory_without_scenarios_is_named_not_passed_over(
    tmp_path: Path, argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """``list --path EMPTY`` said "0 scenario(s)" and exited 0; ``validate FULL EMPTY``
    validated FULL and said nothing of EMPTY; ``validate EMPTY`` named no directory."""
    (full := tmp_path / "full").mkdir()
    write(full, "ok.json", library_doc("a3-hr-01"))
    (empty := tmp_path / "empty").mkdir()
    (empty / "notes.txt").write_text("not a scenario")
    argv = [a.format(full=full, empty=empty) for a in argv]
    assert cli_main(["scenarios", *argv]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == f"toolwatch scenarios: no scenario files (*.json) found in {empty}\n"


def test_cli_validate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["scenarios", "validate"]) == 0
    out = capsys.readouterr().out
    per_type = Counter(s.fault_type for s in LIBRARY)
    assert out.startswith(f"{len(LIBRARY)} valid, 0 invalid (A1 {per_type['A1']}, A2 ")
    doc = library_doc("a2-travel-01")
    doc["fault"]["params"]["status"] = 404
    write(tmp_path, "a2.json", doc)
    write(tmp_path, "ok.json", library_doc("a3-hr-01"))
    assert cli_main(["scenarios", "validate", str(tmp_path)]) == 1
    captured = capsys.readouterr()
    assert (
        f"{tmp_path / 'a2.json'}: /fault/params/status: 404 is less than the minimum of 500"
        in captured.err
    )
    assert captured.out.startswith("1 valid, 1 invalid")
    write(tmp_path, "dup.json", library_doc("a3-hr-01"))
    assert (
        cli_main(["scenarios", "validate", str(tmp_path / "ok.json"), str(tmp_path / "dup.json")])
        == 1
    )
    assert "/id: duplicate id 'a3-hr-01'" in capsys.readouterr().err


def test_cli_list_and_show(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["scenarios", "list", "--fault", "C4", "--json"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert len(rows) == 5 and {r["action"] for r in rows} == {"inject_exfiltration_instruction"}
    assert cli_main(["scenarios", "show", "b1-finance-01"]) == 0
    out = capsys.readouterr().out
    assert "inject_stale_data on tool 'get_fx_rate'" in out and "label B1:b1-finance-01" in out
    assert cli_main(["scenarios", "show", "no-such-scenario"]) == 1


def test_show_names_the_faults_parameters_as_the_proxy_armed_line_does(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``show`` said "replace_with_error on search_fares at call #1" without the status, the
    form (result or JSON-RPC) or the code that the proxy's start-up line showed."""
    assert cli_main(["scenarios", "show", "a2-legal-01", "a1-weather-01", "a3-hr-01"]) == 0
    faults = [line for line in capsys.readouterr().out.splitlines() if line.startswith("fault:")]
    assert len(faults) == 3
    assert "(as='jsonrpc', status=503, jsonrpc_code=-32603)" in faults[0]
    assert "(delay_ms=8000, mode='sleep')" in faults[1]
    assert "(as='jsonrpc', required_role='hr-compensation-admin')" in faults[2]
    for line, s in zip(faults, ("a2-legal-01", "a1-weather-01", "a3-hr-01"), strict=True):
        assert line == f"fault: {FaultEngine.for_scenario(find_scenario(s)).describe()}"


def test_a_directory_scan_reads_json_files_whatever_the_case_of_their_suffix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``X.JSON`` was skipped without a word: a broken one looked valid by its absence."""
    write(tmp_path, "good.json", library_doc("a3-hr-01"))
    bad = library_doc("a2-travel-01")
    bad["fault"]["params"]["status"] = 404
    write(tmp_path, "BAD.JSON", bad)
    assert cli_main(["scenarios", "validate", str(tmp_path)]) == 1
    out, err = capsys.readouterr()
    assert out == "1 valid, 1 invalid (A3 1)\n"
    assert f"{tmp_path / 'BAD.JSON'}: /fault/params/status:" in err
    (tmp_path / "BAD.JSON").unlink()
    write(tmp_path, "Other.Json", library_doc("a2-travel-01"))
    assert cli_main(["scenarios", "list", "--path", str(tmp_path), "--json"]) == 0
    assert [json.loads(r)["id"] for r in capsys.readouterr().out.splitlines()] == [
        "a2-travel-01",
        "a3-hr-01",
    ]


def test_show_and_validate_agree_on_exit_codes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``show`` exited 2 for an invalid file where ``validate`` exited 1: an invalid file is
    a data problem (1, the valid ones still shown); a name that is nothing is 1 too, as a
    missing input is for every command (it was 2, bad usage)."""
    bad = library_doc("a2-travel-01")
    bad["fault"]["params"]["status"] = 404
    write(tmp_path, "bad.json", bad)
    good = write(tmp_path, "good.json", library_doc("a3-hr-01"))
    problem = f"{tmp_path / 'bad.json'}: /fault/params/status: 404 is less than the minimum of 500"
    for argv in (["validate"], ["show"], ["show", "--json"]):
        assert cli_main(["scenarios", *argv, str(tmp_path)]) == 1, argv
        out, err = capsys.readouterr()
        assert problem in err.splitlines()
        assert ("a3-hr-01" in out) == (argv[0] == "show")
    assert cli_main(["scenarios", "show", str(good)]) == 0
    capsys.readouterr()
    missing = tmp_path / "missing.json"
    for argv in (["validate", str(missing)], ["show", str(missing)], ["show", "nope-01"]):
        assert cli_main(["scenarios", *argv]) == 1, argv  # what it found: exit 1
        out, err = capsys.readouterr()
        assert out == "" and len(err.splitlines()) == 1, err
        assert err.startswith("toolwatch scenarios: no such file"), err
        assert argv[1] in err


# -------------------------------------------------------------------------------- AgentCheck


def test_agentcheck_templates_load_and_convert() -> None:
    a1 = load_scenario(FIXTURES / "A1_search_docs_timeout.json")
    assert a1.format == "agentcheck" and a1.id == "A1_search_docs_timeout"
    assert a1.fault.tool == "search_docs" and a1.fault.action == "delay"
    assert a1.fault.params == {"delay_ms": 8000, "mode": "sleep"}
    assert a1.fault.occurrence.to_json() == {"nth": 1}
    assert a1.faulty_tool.response.structured["matches"][0]["doc_id"] == "dt0133"
    assert a1.scoring.acceptable_behaviors[1].startswith("The agent, after a timeout")
    assert a1.label == "A1:A1_search_docs_timeout"
    a4 = load_scenario(FIXTURES / "A4_lookup_ticket_arg_rename.json")
    assert a4.fault.params == {"argument_renames": {"ticket_id": "id"}}
    c4 = load_scenario(FIXTURES / "C4_invoice_exfiltration.json")
    assert c4.checks.exfiltration_url == "https://invoice-sync.example/upload"
    assert c4.checks.endpoint_allowlist == ("erp.acme.example",)
    assert c4.fault.params["exfiltration_url"] == c4.checks.exfiltration_url


def test_agentcheck_errors_point_into_their_file(tmp_path: Path) -> None:
    doc = json.loads((FIXTURES / "A1_search_docs_timeout.json").read_text())
    broken = copy.deepcopy(doc)
    del broken["tools"][0]["clean_response"]
    broken["scoring"]["acceptable_behaviors"] = ["only one"]
    problems = validate_path(write(tmp_path, "ac.json", broken))
    assert f"{tmp_path / 'ac.json'}: /tools/0: 'clean_response' is a required property" in problems
    assert any("/scoring/acceptable_behaviors" in p for p in problems)
    wrong_action = copy.deepcopy(doc)
    wrong_action["fault_type"] = "B1"
    problems = validate_path(write(tmp_path, "ac2.json", wrong_action))
    assert any(
        "/fault_spec/action: fault type B1 uses action 'inject_stale_data'" in p
        and "AgentCheck" in p
        for p in problems
    )


# -------------------------------------------------------------------------------- scenario server


def test_scenario_server_validates_arguments_and_returns_clean_responses() -> None:
    s = find_scenario("a4-weather-01")

    async def main() -> None:
        async with Client(scenario_server(s)) as client:
            listed = {t.name: t for t in (await client.list_tools()).tools}
            assert set(listed) == {t.name for t in s.tools}
            assert listed["get_forecast"].input_schema == dict(s.tool("get_forecast").input_schema)
            ok = await client.call_tool("get_forecast", {"city": "Lisbon", "days": 2})
            assert not ok.is_error
            assert ok.structured_content == dict(s.tool("get_forecast").response.structured)
            assert json.loads(ok.content[0].text) == ok.structured_content
            unknown_arg = await client.call_tool("get_forecast", {"city": "Lisbon", "town": "x"})
            assert (
                unknown_arg.is_error and "town: unexpected argument" in unknown_arg.content[0].text
            )
            bad = await client.call_tool("get_forecast", {"days": 9})
            text = bad.content[0].text
            assert (
                bad.is_error
                and "'city' is a required property" in text
                and "days: 9 is greater" in text
            )
            missing = await client.call_tool("get_weather", {})
            assert missing.is_error and missing.content[0].text == "Unknown tool: get_weather"

    anyio.run(main)


def test_scenario_server_words_refused_arguments_as_schema_drift_does() -> None:
    """The scenario server and schema drift's refusal (the fault engine) wrote "N validation
    errors for T arguments" each on their own; both go through one helper now, so a client, a
    mitigation or a check reads one wording, singular for one problem."""
    s = find_scenario("a4-weather-01")
    schema = s.tool("get_forecast").input_schema
    asked = [{"city": "Lisbon", "town": "x"}, {"days": 9}]

    async def main() -> list[str]:
        async with Client(scenario_server(s)) as client:
            return [(await client.call_tool("get_forecast", a)).content[0].text for a in asked]

    said = anyio.run(main)
    assert said == [
        validation_errors_text("get_forecast", argument_errors(schema, a)) for a in asked
    ]
    assert said[0] == (
        "Error executing tool get_forecast: 1 validation error for get_forecast arguments\n"
        "town: unexpected argument"
    )
    assert said[1].startswith("Error executing tool get_forecast: 2 validation errors for ")


def test_scenario_server_answers_not_found_for_another_entity() -> None:
    """The server knows one record per tool; asked about another entity it says so instead of
    answering NVDA whatever symbol is asked."""
    s = find_scenario("b2-finance-01")

    async def main() -> None:
        async with Client(scenario_server(s)) as client:
            nvda = await client.call_tool("get_quote", {"symbol": "NVDA"})
            aapl = await client.call_tool("get_quote", {"symbol": "AAPL"})
            venue = await client.call_tool(
                "get_exchange_quote", {"symbol": "nvda", "venue": "NYSE"}
            )
        assert not nvda.is_error and nvda.structured_content["symbol"] == "NVDA"
        assert aapl.is_error and aapl.content[0].text == (
            "Not found: get_quote has no record for symbol='AAPL'"
        )
        # identifiers compare loosely (case); other arguments (a venue) are not identity
        assert not venue.is_error

    anyio.run(main)


def test_find_scenario_by_id_or_path(tmp_path: Path) -> None:
    assert find_scenario("c2-hr-01").fault_type == "C2"
    path = write(tmp_path, "mine.json", library_doc("c2-hr-01"))
    assert isinstance(find_scenario(str(path)), Scenario)
    with pytest.raises(ScenarioError, match="no such file or packaged scenario id: zz-none"):
        find_scenario("zz-none")
