"""``toolwatch workbench run|suite``: reproduce → intervene → mitigate from the command line.

``run`` takes one scenario through a clean run, a faulted replay and (with ``--mitigation``)
mitigated replays, and prints the first divergence, the primary check, the diagnostic labels
and ``fix_confirmed``. ``suite`` does that for every scenario of the library (or the given
files) and agent, and prints the pass-rate matrix (agent × fault type) and the
mitigation-impact table. Both append one content-free row per agent run to the store table
``workbench_runs``; the calls themselves reach the store as spans through an in-process
collector, unless ``--no-telemetry``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolwatch.collector.store.location import StoreError, add_store_argument
from toolwatch.injection.workbench.names import AGENT_NAMES, CALL_TIMEOUT, PIN_POLICIES
from toolwatch.usage import (
    UsageError,
    UserError,
    check_output,
    non_negative_float,
    non_negative_int,
    positive_float,
    positive_int,
)
from toolwatch.words import counted

if TYPE_CHECKING:  # imported when the command runs: `workbench --help` needs no mcp or Arrow
    from toolwatch.injection.faults.scenario import Scenario
    from toolwatch.injection.workbench.live_detect import LiveDetectors
    from toolwatch.injection.workbench.runner import WorkbenchConfig

log = logging.getLogger(__name__)

HELP = "run scenarios against agents: reproduce, intervene, mitigate"
#: One run per mitigation, AgentCheck's "+All" (retry+schema+scan, no verifier) and the full
#: stack with the verifier ("all").
DEFAULT_SUITE_MITIGATIONS = "retry,schema,scan,verify,retry+schema+scan,all"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="workbench_command", metavar="{run,suite}")
    sub.required = True

    def common(p: argparse.ArgumentParser) -> None:
        add_store_argument(p)
        p.add_argument(
            "--seed",
            type=non_negative_int,
            default=0,
            help="seed for occurrence draws and jitter (default 0)",
        )
        p.add_argument(
            "--call-timeout",
            type=positive_float,
            default=CALL_TIMEOUT,
            help="the agent's deadline per tool call, seconds (A1 delays must exceed it; "
            f"default {CALL_TIMEOUT:g})",
        )
        p.add_argument(
            "--think-time",
            type=non_negative_float,
            default=0.0,
            metavar="S",
            help="seconds each model step takes (default 0: machine speed; about 1.5 or more makes "
            "the runs' timing look like a model's to the detector's time cue)",
        )
        p.add_argument(
            "--no-telemetry",
            action="store_true",
            help="do not export the runs' tool-call spans to the store",
        )

    run = sub.add_parser("run", help="one scenario: clean, faulted and mitigated runs")
    run.add_argument("scenario", help="scenario file (toolwatch or AgentCheck format) or id")
    run.add_argument(
        "--agent", choices=AGENT_NAMES, default="naive", help="reference agent (default naive)"
    )
    run.add_argument(
        "--mitigation",
        action="append",
        default=[],
        metavar="LIST",
        help="mitigations for one mitigated run, comma-separated: retry,schema,scan,verify "
        "or all (repeat the option for several mitigated runs)",
    )
    run.add_argument("--json", action="store_true", help="print the report as JSON")
    common(run)

    suite = sub.add_parser("suite", help="every scenario x agent: pass rates and mitigation impact")
    suite.add_argument(
        "--agents", default="naive,careful", help="comma-separated agents (default naive,careful)"
    )
    suite.add_argument(
        "--mitigations",
        default=DEFAULT_SUITE_MITIGATIONS,
        help="comma-separated mitigation sets, one mitigated run each; join names with + for a "
        f"combined set; 'none' for no mitigated runs (default {DEFAULT_SUITE_MITIGATIONS})",
    )
    suite.add_argument(
        "--scenarios",
        nargs="+",
        metavar="PATH",
        help="scenario files or directories (default: the packaged library)",
    )
    suite.add_argument(
        "--concurrency",
        type=positive_int,
        default=16,
        help="scenario x agent units in flight at once (default 16; they mostly wait: "
        "timeouts, think time)",
    )
    suite.add_argument(
        "--detect",
        action="store_true",
        help="score the runs' calls with the content-free detector (the store's model from "
        "toolwatch train, or --model)",
    )
    suite.add_argument(
        "--model", type=Path, help="normal model file (default: the store's own, STORE/models)"
    )
    suite.add_argument(
        "--pins",
        choices=PIN_POLICIES,
        default="clean",
        help="with --detect, the approved listings the rug-pull alerts compare with: 'clean' "
        "approves each scenario's clean-run listing before its faulted run (trust on first "
        "use, as a user approves a server after a first session); 'store' uses only the pins "
        "already in the store (default clean)",
    )
    suite.add_argument(
        "--skip-invalid",
        action="store_true",
        help="run the valid scenarios of --scenarios and name each file left out (default: "
        "refuse the suite when any file is invalid, so no figure leaves one out unsaid)",
    )
    suite.add_argument("--json", type=Path, metavar="FILE", help="also write the summary as JSON")
    common(suite)


def run(args: argparse.Namespace) -> int:
    from toolwatch.injection.faults.scenario import ScenarioError, ScenarioNotFound
    from toolwatch.injection.proxy.sdk_logs import content_free_sdk_logs

    content_free_sdk_logs()  # with -v the in-process servers log failed calls' messages
    if not getattr(args, "verbose", False):
        # faulted runs make the in-process servers log every failing tool at INFO
        logging.getLogger("mcp.server").setLevel(logging.WARNING)
    try:
        if args.workbench_command == "run":
            return _run_one(args)
        return _run_suite(args)
    except StoreError as exc:  # the store could not be written or read: 1, not bad usage
        print(f"toolwatch workbench: {exc}", file=sys.stderr)
        return exc.code
    except ScenarioNotFound:
        raise  # a scenario that names nothing: one line, exit 1 (toolwatch.usage)
    except ScenarioError as exc:  # a scenario that does not validate: input, 1, not usage
        print(f"toolwatch workbench: {exc}", file=sys.stderr)
        return exc.code


# ---------------------------------------------------------------------------------------------


def _config(args: argparse.Namespace) -> WorkbenchConfig:
    from toolwatch.injection.workbench.agent import AgentConfig
    from toolwatch.injection.workbench.runner import WorkbenchConfig

    if args.call_timeout <= 0:
        raise UsageError("--call-timeout must be positive")
    return WorkbenchConfig(
        agent=AgentConfig(call_timeout=args.call_timeout, seed=args.seed), seed=args.seed
    )


def _check_agent(name: str) -> None:
    if name not in AGENT_NAMES:
        raise UsageError(f"unknown agent {name!r}; choose from {', '.join(AGENT_NAMES)}")
    if name == "llm":
        from toolwatch.injection.workbench.llm_agent import LLMNotConfigured, LLMSettings

        try:
            LLMSettings.from_env()
        except LLMNotConfigured as exc:
            raise UsageError(str(exc)) from exc


def _mitigation_sets(values: Sequence[str]) -> list[tuple[str, ...]]:
    from toolwatch.injection.mitigations.stack import parse_mitigations

    sets: list[tuple[str, ...]] = []
    for value in values:
        try:
            names = parse_mitigations(value)
        except ValueError as exc:
            raise UsageError(str(exc)) from exc
        if names and names not in sets:
            sets.append(names)
    return sets


def _store(args: argparse.Namespace) -> Any:
    from toolwatch.collector.store.parquet_store import Store

    store = Store(args.store)
    if store.root.exists() and not store.root.is_dir():  # output it cannot use: 1, not usage
        raise StoreError(f"--store {store.root} is not a directory")
    return store


@contextmanager
def telemetry(
    store: Any, enabled: bool, detectors: LiveDetectors | None = None
) -> Iterator[str | None]:
    """Instrument the MCP client (argument provenance on) and export its spans to an
    in-process collector writing to ``store``, whose stored batches and listings feed
    ``detectors`` when given; yields the collector URL (``None`` when disabled)."""
    if not enabled:
        yield None
        return
    try:
        from toolwatch.collector.otlp.server import Collector
    except ImportError as exc:  # a missing extra, not the command line: 1
        raise UserError(
            f"cannot record the runs' spans: the collector is not available ({exc}); "
            "use --no-telemetry to run without them"
        ) from exc
    from toolwatch.instrumentation import configure_otlp, delivery, instrument, uninstrument

    collector = Collector(
        store,
        port=0,
        on_batch=None if detectors is None else detectors.on_batch,
        on_listings=None if detectors is None else detectors.on_listings,
    )
    collector.start()
    provider = None
    problem = None
    try:
        url = collector.url  # bound by start(), which raises when it cannot listen
        # block: a full export queue waits instead of dropping (every call must reach --detect)
        provider = configure_otlp(endpoint=url, service_name="toolwatch-workbench", block=True)
        instrument(tracer_provider=provider, provenance=True)
        yield url
    finally:
        uninstrument()
        if provider is not None:
            provider.force_flush()
            problem = collector.check_delivery(delivery(provider))  # emitted == stored?
            provider.shutdown()
        collector.stop()  # drains the hooks: every alert is stored when this returns
    if problem is not None:
        print(f"toolwatch workbench: telemetry incomplete: {problem}", file=sys.stderr)


def _append(store: Any, rows: list[dict[str, Any]]) -> None:
    from toolwatch.injection.workbench.report import RUNS_TABLE, runs_schema

    try:
        store.append(RUNS_TABLE, rows, schema=runs_schema(), partition_by="time")
    except OSError as exc:
        raise StoreError(f"cannot write the runs to {store.root}: {exc.strerror}") from exc


def _run_one(args: argparse.Namespace) -> int:
    from toolwatch.injection.faults.library import find_scenario
    from toolwatch.injection.workbench.report import render_report, report_json, report_rows
    from toolwatch.injection.workbench.runner import RunReport, run_scenario

    _check_agent(args.agent)
    scenario = find_scenario(args.scenario)
    config = _config(args)
    sets = _mitigation_sets(args.mitigation)
    store = _store(args)
    with telemetry(store, not args.no_telemetry):
        report: RunReport = asyncio.run(
            run_scenario(scenario, args.agent, mitigations=sets, config=config)
        )
    rows = report_rows(report, run_id=report.run_id, config=config)
    _append(store, rows)
    if args.json:
        print(json.dumps(report_json(report), indent=2, default=str))
    else:
        print(render_report(report))
    return 0


def _load(paths: Sequence[str] | None, *, skip_invalid: bool = False) -> tuple[list[Scenario], int]:
    """The suite's scenarios and how many files were left out (``skip_invalid``; each named on
    stderr). Without it any invalid file — a problem or an id another file has — refuses the
    suite in one line that counts them."""
    from toolwatch.injection.faults.library import (
        distinct_scenarios,
        iter_scenario_paths,
        load_library,
        load_scenario,
    )

    if not paths:
        library = load_library()
        if not library:
            # a broken install, not the command line: 1
            raise UserError("the packaged scenario library is empty; pass --scenarios")
        return library, 0
    # A path that names nothing, or a directory without a scenario file, is refused naming it,
    # exit 1 as a missing input is for every command (it was "1 of 1 scenario files are not
    # valid", offering --skip-invalid), and an empty directory beside full ones was passed over.
    missing = [p for p in paths if not Path(p).exists()]
    if missing:
        raise UserError(f"--scenarios: no such file or directory: {', '.join(missing)}")
    empty = [p for p in paths if next(iter_scenario_paths([p]), None) is None]
    if empty:
        raise UserError(f"--scenarios: no scenario files (*.json) found in {', '.join(empty)}")
    files = list(iter_scenario_paths(paths))
    scenarios: list[Scenario] = []
    bad: list[str] = []
    for scenario, problem in distinct_scenarios((str(p), partial(load_scenario, p)) for p in files):
        if scenario is None:
            bad.append(str(problem).splitlines()[0])
        else:
            scenarios.append(scenario)
    if bad and not skip_invalid:  # input it cannot use: 1, as `scenarios validate` says it
        raise UserError(
            f"{len(bad)} of {counted(len(files), 'scenario file')} are not valid (the first: "
            f"{bad[0]}); "
            "`toolwatch scenarios validate` lists every problem, --skip-invalid runs the "
            f"{counted(len(scenarios), 'valid one')}"
        )
    for line in bad:
        print(f"toolwatch workbench: skipped {line}", file=sys.stderr)
    if not scenarios:
        raise UserError(f"none of the {counted(len(files), 'scenario file')} is valid")
    return scenarios, len(bad)


def _run_suite(args: argparse.Namespace) -> int:
    from toolwatch.injection.workbench.report import RUNS_TABLE
    from toolwatch.injection.workbench.suite import render_summary, run_suite

    agents = [a.strip() for a in args.agents.split(",") if a.strip()]
    if not agents:
        raise UsageError("--agents names no agent")
    for agent in agents:
        _check_agent(agent)
    if args.detect and args.no_telemetry:
        raise UsageError("--detect scores the runs' recorded calls: drop --no-telemetry")
    if args.json is not None:  # written after the whole suite: said before the first run
        check_output(args.json, "--json")
    store = _store(args)
    model = _load_model(store, args.model) if args.detect else None
    if model is not None and args.think_time == 0:
        log.warning(
            "--detect with --think-time 0: model steps follow each other at machine speed, "
            "which the time cue reads as a burst if the model was trained on model-paced calls"
        )
    sets = _mitigation_sets(args.mitigations.split(",")) if args.mitigations else []
    scenarios, skipped = _load(args.scenarios, skip_invalid=args.skip_invalid)
    config = _config(args)
    from tqdm import tqdm

    detectors = None if model is None else _detectors(store, model, args.pins)
    with (
        telemetry(store, not args.no_telemetry, detectors),
        tqdm(
            total=len(scenarios) * len(agents), desc="workbench", unit="run", file=sys.stderr
        ) as bar,
    ):
        result = asyncio.run(
            run_suite(
                scenarios,
                agents,
                mitigations=sets,
                config=config,
                concurrency=args.concurrency,
                on_done=lambda _report: bar.update(1),
                after_clean=None if detectors is None else detectors.after_clean,
            )
        )
    if detectors is not None:
        detectors.close()
    rows = result.rows()
    _append(store, rows)
    summary = result.summary()
    if skipped:
        summary["skipped_invalid_files"] = skipped
    print(render_summary(summary))
    if skipped:
        print(f"\n{counted(skipped, 'invalid scenario file')} left out (named above, on stderr)")
    print(
        f"\nrun id {result.run_id}: {counted(len(rows), 'run')} saved to {store.root}/{RUNS_TABLE}"
    )
    if model is not None:  # imported here: `workbench --help` needs no scorer (scipy, river)
        from toolwatch.injection.workbench.detect import detect_suite, render_detection
        from toolwatch.injection.workbench.live_detect import live_detection, render_live

        detection = detect_suite(store, model, result)
        detection["live"] = live_detection(store, result, model, args.pins)
        summary["detection"] = detection
        print()
        print(render_detection(detection))
        print()
        print(render_live(detection["live"]))
    if args.json:
        args.json.write_text(json.dumps(summary, indent=2, sort_keys=True, default=str) + "\n")
    return 0


def _detectors(store: Any, model: Any, pins: str) -> LiveDetectors:
    from toolwatch.detection.model.location import ModelError
    from toolwatch.injection.workbench.live_detect import LiveDetectors

    try:
        return LiveDetectors(store, model, pins)
    except ModelError as exc:  # a missing or unusable model: exit 1, as every command says it
        raise UserError(f"--detect: {exc}") from exc


def _load_model(store: Any, explicit: Path | None) -> Any:
    try:
        from toolwatch.detection import ModelError, NormalModel
        from toolwatch.detection.model.location import model_path_for
    except ImportError as exc:  # the detection extra is missing: 1, as every command says it
        raise UserError(f"--detect needs the detection component ({exc})") from exc
    try:
        path = model_path_for(store.root, explicit)
        return NormalModel.load(path)
    except (ModelError, OSError) as exc:  # a missing or unusable model: exit 1
        raise UserError(f"--detect: {exc}") from exc
