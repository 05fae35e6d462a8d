"""Every table toolwatch stores, declared once: its name, columns, partition column and purpose.

This is the registry the store, the Arrow schemas, the DuckDB views and the docs all derive
from (:mod:`toolwatch.collector.store.arrow_schema`, :class:`~toolwatch.collector.store.Store`,
``docs/ARCHITECTURE.md``, checked by a test). A component that adds a table adds it here; no
other module spells a column list. Only the standard library is imported, so the production
install (instrumentation) can read it too.

The call record's own fields live in :mod:`toolwatch.record` (they map to span attributes);
the other tables are results written by toolwatch's commands.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from toolwatch.record import CALL_FIELDS, RECEIVED, TOOL_LIST_FIELDS, Field


@dataclass(frozen=True, slots=True)
class Table:
    """A stored table: ``<store>/<name>/date=YYYY-MM-DD/*.parquet``, one DuckDB view."""

    name: str
    fields: tuple[Field, ...]
    #: the timestamp column whose UTC date picks a row's ``date=`` partition
    time_column: str
    #: who writes it (a command or component), for the docs
    writer: str
    doc: str
    #: columns identifying a row: compaction keeps one row per key (a span stored twice)
    key: tuple[str, ...] = ()

    @property
    def column_names(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.fields)

    def field(self, name: str) -> Field:
        for f in self.fields:
            if f.name == name:
                return f
        raise KeyError(f"table {self.name!r} has no column {name!r}")


def _f(name: str, arrow: str, doc: str, *, nullable: bool = True) -> Field:
    return Field(name, arrow, nullable, None, doc)


ALERT_FIELDS: Final[tuple[Field, ...]] = (
    _f("alert_time", "timestamp", "when the alert was raised, UTC", nullable=False),
    _f("session_id", "string", "session of the stream that alarmed", nullable=False),
    _f("agent_id", "string", "subagent of the stream; null for the main agent"),
    _f("seq", "int32", "position of the call in its session"),
    _f("call_index", "int32", "0-based position of the call in its stream", nullable=False),
    _f("call_time", "timestamp", "start of the call that crossed, UTC", nullable=False),
    _f("span_id", "string", "the call's span id"),
    _f("tool", "string", "the call's tool", nullable=False),
    _f("cue_set", "string", "cue set of the watched statistic (all, order, ...)", nullable=False),
    _f(
        "detector",
        "string",
        "detector of the watched statistic (point, ewma, cusum)",
        nullable=False,
    ),
    _f("cue", "string", "the cue that explains the crossing", nullable=False),
    _f("score", "float64", "the statistic at the call", nullable=False),
    _f("threshold", "float64", "the threshold it crossed", nullable=False),
    _f(
        "model_id",
        "string",
        "id of the model that raised it (its content's digest, creation time left out)",
        nullable=False,
    ),
    _f("model_version", "int32", "model artifact format version", nullable=False),
    _f(
        "explanation",
        "string",
        "why, in numbers and tool names (provenance alerts: payload bytes, egress class, "
        "source tool, encoding; never content); null for the study's statistics",
    ),
)

SIMULATION_FIELDS: Final[tuple[Field, ...]] = (
    _f("generated_time", "timestamp", "when the workload was written, UTC", nullable=False),
    _f("seed", "int64", "random seed", nullable=False),
    _f("sessions", "int64", "sessions generated", nullable=False),
    _f("start", "string", "first day (ISO)", nullable=False),
    _f("days", "int64", "days covered", nullable=False),
    _f(
        "runaway_retries",
        "int64",
        "retries of the labelled-normal runaway subagent",
        nullable=False,
    ),
    _f("calls", "int64", "calls generated", nullable=False),
    _f("calls_written", "int64", "calls not already in the store, written", nullable=False),
    _f("config", "string", "the full configuration, JSON", nullable=False),
)

EXPERIMENT_FIELDS: Final[tuple[Field, ...]] = (
    _f("run_id", "string", "experiment run id"),
    _f("created", "timestamp", "when the run finished, UTC"),
    _f("variant", "string", "standard, or an ablation (no_response_ids)"),
    _f("kind", "string", "injected anomaly or control"),
    _f("cue_set", "string", "all, order, size, time, failure"),
    _f("detector", "string", "point, ewma, cusum"),
    _f("threshold_mode", "string", "fa_target (shared grid) or operating_point"),
    _f("threshold", "float64", "the threshold used"),
    _f("fa_target", "float64", "the session false-alarm target asked for"),
    _f("fa_reached", "float64", "the session false-alarm rate actually reached"),
    _f("normal_sessions", "int64", "normal test streams behind the false-alarm rate"),
    _f("runs", "int64", "injected runs"),
    _f("detected", "int64", "runs detected within the window"),
    _f("rate", "float64", "detected / runs"),
    _f("ci_low", "float64", "bootstrap 95 % interval, low"),
    _f("ci_high", "float64", "bootstrap 95 % interval, high"),
    _f("median_latency", "float64", "median calls from insertion to first crossing"),
    _f("auc", "float64", "per-call AUC, inserted vs other calls"),
    _f("notes_json", "string", "why runs were skipped, per kind, JSON"),
    _f("split_json", "string", "the split and the data fingerprint, JSON"),
    _f("config_json", "string", "the full configuration, JSON"),
    _f("seeds", "string", "comma-separated seeds"),
)

EXPERIMENT_RUN_FIELDS: Final[tuple[Field, ...]] = (
    _f("run_id", "string", "experiment run id"),
    _f("created", "timestamp", "when the run finished, UTC"),
    _f("variant", "string", "standard, or an ablation"),
    _f("kind", "string", "injected kind; normal = an uninjected test stream"),
    _f("seed", "int64", "injection seed"),
    _f(
        "session_id",
        "string",
        "the test stream: its session id, `<session>/<agent>` for a subagent",
    ),
    _f("agent_id", "string", "the test stream's agent (null: the main agent, or an older run)"),
    _f(
        "stream_index",
        "int64",
        "the stream's place in the experiment's test split (first call, session, agent): "
        "the order its bootstrap resamples (null: a run saved before this column)",
    ),
    _f("position", "int64", "insertion position (call index)"),
    _f("inserted", "int64", "calls inserted or re-timed"),
    _f("note", "string", "what was injected (structure only)"),
    _f("cue_set", "string", "all, order, size, time, failure"),
    _f("detector", "string", "point, ewma, cusum"),
    _f("threshold_mode", "string", "fa_target or operating_point"),
    _f("detected", "bool", "crossed within the window (normal: ever alarmed)"),
    _f("latency", "int64", "calls from insertion to first crossing"),
    _f("window_max", "float64", "largest statistic inside the detection window"),
)

REPLAY_FIELDS: Final[tuple[Field, ...]] = (
    _f("run_id", "string", "replay run id", nullable=False),
    _f("created", "timestamp", "when the replay finished, UTC", nullable=False),
    _f("model", "string", "adaptive, or frozen (the operating point)", nullable=False),
    _f(
        "week",
        "date",
        "the week (its Monday, UTC) of the streams' first call (their first arrival mark "
        "when stamped more than 5 min after it)",
        nullable=False,
    ),
    _f(
        "kind",
        "string",
        "injected kind; normal = the week's normal long streams",
        nullable=False,
    ),
    _f("runs", "int64", "copies of the week's streams (normal: streams)", nullable=False),
    _f("detected", "int64", "copies detected in their window (normal: alarmed)", nullable=False),
    _f("thin", "bool", "fewer than 20 normal long streams in the week", nullable=False),
    _f("threshold", "float64", "the model's threshold at the week's end"),
    _f("statistic", "string", "the watched statistic (cue set _ detector)", nullable=False),
    _f("fa_target", "float64", "the share of normal streams asked to alarm", nullable=False),
    _f(
        "totals_json",
        "string",
        "the model's totals (weeks above 2× the target, beyond chance, detection at one "
        "threshold, adaptive counts), JSON",
        nullable=False,
    ),
    _f("split_json", "string", "the split and the data fingerprint, JSON", nullable=False),
    _f("config_json", "string", "the full configuration, JSON", nullable=False),
    _f("seeds", "string", "comma-separated injection seeds", nullable=False),
)

WORKBENCH_RUN_FIELDS: Final[tuple[Field, ...]] = (
    _f("run_id", "string", "suite run id", nullable=False),
    _f("time", "timestamp", "when the run finished, UTC", nullable=False),
    _f("scenario_id", "string", "scenario", nullable=False),
    _f("fault_type", "string", "A1 ... C4", nullable=False),
    _f("domain", "string", "scenario domain"),
    _f("agent", "string", "reference agent", nullable=False),
    _f("mode", "string", "clean, faulted or mitigated", nullable=False),
    _f("mitigation", "string", "mitigations applied (none, retry, ...)", nullable=False),
    _f("status", "string", "pass, fail or not_exercised", nullable=False),
    _f("passed", "bool", "the primary checks passed", nullable=False),
    _f("exercised", "bool", "the fault was exercised by the run", nullable=False),
    _f("check_reason", "string", "why the primary check gave its verdict"),
    _f(
        "check_evidence",
        "string",
        "what the primary check looked at, '; '-joined (step numbers, tools, fields, counts)",
    ),
    _f("divergence_step", "int32", "first step where the run left the clean trajectory"),
    _f("divergence_reason", "string", "why it diverged there"),
    _f("failure_detection", "string", "diagnostic label"),
    _f("recovery_action", "string", "diagnostic label"),
    _f("uncertainty_communication", "string", "diagnostic label"),
    _f("fix_confirmed", "bool", "the mitigation fixed the faulted run"),
    _f("task_solved", "bool", "the task's answer checks passed"),
    _f("steps", "int32", "tool calls made", nullable=False),
    _f("injected_calls", "int32", "calls answered with a fault", nullable=False),
    _f("session_id", "string", "the run's conversation id (its calls' session)", nullable=False),
    _f("seed", "int64", "suite seed", nullable=False),
    _f("config", "string", "the suite configuration, JSON", nullable=False),
)

STREAM_SCORE_FIELDS: Final[tuple[Field, ...]] = (
    _f("scored_time", "timestamp", "when the streams were scored, UTC", nullable=False),
    _f(
        "model_id",
        "string",
        "id of the model that scored them (its content's digest, creation time left out)",
        nullable=False,
    ),
    _f("statistic", "string", "the watched statistic (cue set _ detector)", nullable=False),
    _f("session_id", "string", "the stream's session", nullable=False),
    _f("agent_id", "string", "the stream's subagent; null for the main agent"),
    _f("calls", "int64", "calls in the stream (in the scored window)", nullable=False),
    _f("first_time", "timestamp", "the stream's first call, UTC", nullable=False),
    _f("last_time", "timestamp", "the stream's last call, UTC", nullable=False),
    _f("peak", "float64", "largest value of the statistic in the stream", nullable=False),
    _f("peak_index", "int32", "0-based position in the stream of that value", nullable=False),
    _f("threshold", "float64", "the model's operating-point threshold", nullable=False),
    _f("margin", "float64", "peak - threshold (> 0: the stream is flagged)", nullable=False),
    _f("flagged", "bool", "the statistic went above the threshold", nullable=False),
    _f("first_over_index", "int32", "position of the first call above the threshold"),
    _f("first_over_seq", "int32", "that call's position in its session"),
    _f("first_over_tool", "string", "that call's tool"),
    _f("first_over_time", "timestamp", "that call's start, UTC"),
    _f("cue", "string", "the cue that explains the first crossing"),
    _f("calls_over", "int64", "calls above the threshold", nullable=False),
)

RULE_ALERT_FIELDS: Final[tuple[Field, ...]] = (
    _f("alert_time", "timestamp", "when the rule fired, UTC", nullable=False),
    _f("rule", "string", "the rule's name (rules.toml)", nullable=False),
    _f("key", "string", "what the row measured (its other columns, JSON); '' if none"),
    _f("value", "float64", "the query's value", nullable=False),
    _f("op", "string", "the comparison (>, >=, <, <=)", nullable=False),
    _f("threshold", "float64", "the rule's threshold", nullable=False),
    _f("window_s", "float64", "recent_calls window, seconds", nullable=False),
    _f("description", "string", "the rule's description"),
)

LISTING_ALERT_FIELDS: Final[tuple[Field, ...]] = (
    _f("alert_time", "timestamp", "when the alert was raised, UTC", nullable=False),
    _f(
        "kind",
        "string",
        "changed_in_session, changed_since_approval or new_tool",
        nullable=False,
    ),
    _f("server", "string", "MCP server of the listed tool; null if it had no name"),
    _f("tool", "string", "the listed tool", nullable=False),
    _f("old_digest", "string", "digest before (in the session, or the approved pin); null: new"),
    _f("new_digest", "string", "digest now listed", nullable=False),
    _f("session_id", "string", "conversation that received the listing"),
    _f("listed_time", "timestamp", "when the listing was received, UTC", nullable=False),
    _f("span_id", "string", "the tools/list span"),
    _f("service", "string", "resource service.name of the agent"),
)

TOOL_PIN_FIELDS: Final[tuple[Field, ...]] = (
    _f("approved_time", "timestamp", "when the digest was approved, UTC", nullable=False),
    _f("server", "string", "MCP server ('' when it had no name)", nullable=False),
    _f("tool", "string", "the approved tool", nullable=False),
    _f(
        "digest",
        "string",
        "the approved digest (sha256 of name+description+schema)",
        nullable=False,
    ),
    _f("origin", "string", "how it was approved: listing (the latest seen) or file (an export)"),
)

INGEST_FIELDS: Final[tuple[Field, ...]] = (
    _f("time", "timestamp", "when the row was written, UTC", nullable=False),
    _f(
        "run_id",
        "string",
        "one collector run (counters are totals since its start)",
        nullable=False,
    ),
    _f("listen", "string", "the URL it listened on", nullable=False),
    _f("started", "timestamp", "when the run started, UTC", nullable=False),
    _f("final", "bool", "written at a clean stop (the run's last row)", nullable=False),
    _f("requests", "int64", "requests answered or refused", nullable=False),
    _f("spans", "int64", "spans received in accepted requests", nullable=False),
    _f("calls", "int64", "calls rows written", nullable=False),
    _f("tool_listings", "int64", "tool_lists rows written", nullable=False),
    _f("stored_spans", "int64", "spans that became rows", nullable=False),
    _f("rejected_spans", "int64", "tool spans rejected (partial_success)", nullable=False),
    _f("ignored_spans", "int64", "spans that are no tool call", nullable=False),
    _f("duplicate_spans", "int64", "spans stored already (exporter retries)", nullable=False),
    _f("refused_requests", "int64", "requests answered with an error status", nullable=False),
    _f("client_disconnects", "int64", "requests whose client left", nullable=False),
    _f("rejected_by", "string", "rejected spans by reason, JSON", nullable=False),
    _f("ignored_by", "string", "ignored spans by reason, JSON", nullable=False),
    _f("refused_by", "string", "refused requests by HTTP status, JSON", nullable=False),
    _f("files", "int64", "Parquet files written", nullable=False),
    _f("compacted_files", "int64", "small files merged away", nullable=False),
    # null in rows written before these existed (read as 0 and {})
    _f("flagged_spans", "int64", "stored calls kept without a duration (times flawed)"),
    _f("flagged_by", "string", "flagged calls by reason (end_before_start, no_end_time), JSON"),
)

CALLS: Final = Table(
    "calls",
    CALL_FIELDS,
    "start_time",
    "collector, import, simulate",
    "one row per tool call",
    key=("trace_id", "span_id"),
)
TOOL_LISTS: Final = Table(
    "tool_lists",
    TOOL_LIST_FIELDS,
    "listed_time",
    "collector",
    "one row per tool announced by tools/list (a digest, never the text)",
    key=("trace_id", "span_id", "tool", "digest"),
)
ALERTS: Final = Table(
    "alerts", ALERT_FIELDS, "alert_time", "collector (live scorer)", "one row per alert"
)
SIMULATIONS: Final = Table(
    "simulations",
    SIMULATION_FIELDS,
    "generated_time",
    "simulate",
    "one row per simulated workload written",
)
EXPERIMENTS: Final = Table(
    "experiments",
    EXPERIMENT_FIELDS,
    "created",
    "experiment",
    "one row per run × variant × kind × cue set × detector × threshold mode",
)
EXPERIMENT_RUNS: Final = Table(
    "experiment_runs",
    EXPERIMENT_RUN_FIELDS,
    "created",
    "experiment",
    "one row per injected (or normal) test stream × cue set × detector × threshold mode",
)
REPLAYS: Final = Table(
    "replays",
    REPLAY_FIELDS,
    "created",
    "replay",
    "one row per replay run × model (adaptive, frozen) × week × kind (normal: the week's "
    "normal long streams and how many alarmed)",
)
WORKBENCH_RUNS: Final = Table(
    "workbench_runs",
    WORKBENCH_RUN_FIELDS,
    "time",
    "workbench",
    "one row per scenario × agent × mode × mitigation",
)

STREAM_SCORES: Final = Table(
    "stream_scores",
    STREAM_SCORE_FIELDS,
    "scored_time",
    "scan",
    "one row per stream × watched statistic × scan: the stream's peak against the operating "
    "point (what the app's Sessions page lists, without scoring on page load)",
)

RULE_ALERTS: Final = Table(
    "rule_alerts",
    RULE_ALERT_FIELDS,
    "alert_time",
    "collector (alert rules)",
    "one row per alert of a user-defined rule (SQL over recent calls, a threshold)",
)

LISTING_ALERTS: Final = Table(
    "listing_alerts",
    LISTING_ALERT_FIELDS,
    "alert_time",
    "collector (listing watcher)",
    "one row per tools/list change: a tool's digest changed in a session or against its "
    "approved pin, or a new tool on an approved server (digests, never the text)",
)

TOOL_PINS: Final = Table(
    "tool_pins",
    TOOL_PIN_FIELDS,
    "approved_time",
    "pins approve",
    "one row per approval of a (server, tool) digest; the latest approval of a pair is its pin",
)

INGEST: Final = Table(
    "ingest",
    INGEST_FIELDS,
    "time",
    "collector",
    "the collector's counters, one row per run every progress interval and at stop",
)

#: Every stored table, by name.
TABLES: Final[dict[str, Table]] = {
    t.name: t
    for t in (
        CALLS,
        TOOL_LISTS,
        ALERTS,
        SIMULATIONS,
        EXPERIMENTS,
        EXPERIMENT_RUNS,
        REPLAYS,
        WORKBENCH_RUNS,
        STREAM_SCORES,
        RULE_ALERTS,
        LISTING_ALERTS,
        TOOL_PINS,
        INGEST,
    )
}


def markdown(table: Table) -> str:
    """The table's columns as ``docs/ARCHITECTURE.md`` shows them (checked by a test).

    Tables filled from spans (calls, tool_lists) also name each column's span attribute.
    """
    spans = any(f.attribute for f in table.fields)
    head = "| field | type | null | span attribute | meaning |\n|---|---|---|---|---|\n"
    if not spans:
        head = "| field | type | null | meaning |\n|---|---|---|---|\n"
    lines = []
    for f in table.fields:
        cells = [f"`{f.name}`", f.arrow, "yes" if f.nullable else "no"]
        if spans:
            keys = (f.attribute, *f.fallbacks) if f.attribute else ()
            origin = "(the collector's write)" if f.name == RECEIVED else "(span field)"
            cells.append(", else ".join(f"`{k}`" for k in keys) or origin)
        cells.append(f.doc.replace("|", "\\|"))
        lines.append("| " + " | ".join(cells) + " |\n")
    return head + "".join(lines)
