"""Alert rules beyond the model: a user's SQL over recent calls, a threshold, a schedule.

Rules are declared in a TOML file, by default ``STORE/rules.toml`` (it travels with the store,
like the model; ``toolwatch collector --rules FILE`` names another)::

    [[rule]]
    name = "grep-failing"                    # letters, digits, - and _; unique
    description = "Grep keeps failing"       # optional, shown with the alert
    window = "10m"                           # recent_calls = the calls of the last 10 minutes
    every = "1m"                             # how often the collector evaluates it (>= 5 s)
    threshold = 5                            # fires when value > threshold ...
    op = ">"                                 # ... or >=, <, <=
    sql = \"\"\"
    SELECT tool, count(*) AS value
    FROM recent_calls WHERE failed GROUP BY tool
    \"\"\"

The query is one ``SELECT`` over the store's views plus ``recent_calls`` (``calls`` within the
window, by start time); it returns a numeric ``value`` column and, optionally, other columns
that name what it measured (here ``tool``): each row is judged on its own. An alert is raised
when a row's value *crosses* the threshold — once per excursion, not on every evaluation while
it stays there, as model alerts — and is delivered the same three ways: a WARNING log line, a
row in the store's ``rule_alerts`` table (:data:`toolwatch.tables.RULE_ALERTS`) and, with a
webhook, a POST (``{"alerts": [...]}``, each with ``"kind": "rule"``).

:func:`load_rules` validates a file completely before anything runs — TOML syntax, every field,
the SQL (one read-only statement that DuckDB can bind against the store, with a ``value``
column) — and names the file, the rule and the field in a one-line :class:`RuleError`.
``toolwatch collector`` evaluates rules on its schedule (:meth:`RuleEvaluator.tick`, from its
main loop); ``toolwatch rules check`` validates a file and evaluates it once. A query may run
for its period, at most :data:`MAX_QUERY_S`; a longer one is stopped and logged as a failed
evaluation, and SIGINT/SIGTERM stop the running one at once (:meth:`RuleEvaluator.interrupt`).
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import re
import threading
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Final

import duckdb

from toolwatch import tables
from toolwatch.collector.store.arrow_schema import SCHEMAS
from toolwatch.collector.store.parquet_store import Store, StoreError
from toolwatch.collector.store.read_only import lock_down
from toolwatch.detection.alerting.webhook import WebhookPoster
from toolwatch.documents import loads_toml
from toolwatch.usage import UserError, one_line
from toolwatch.words import counted, noun_for

log = logging.getLogger(__name__)

RULES_IN_STORE: Final = "rules.toml"
RULE_ALERTS_TABLE: Final = tables.RULE_ALERTS.name
RULE_ALERTS_SCHEMA: Final = SCHEMAS[RULE_ALERTS_TABLE]
OPERATORS: Final[dict[str, Callable[[float, float], bool]]] = {
    ">": lambda v, t: v > t,
    ">=": lambda v, t: v >= t,
    "<": lambda v, t: v < t,
    "<=": lambda v, t: v <= t,
}
MIN_EVERY_S: Final = 5.0
#: The longest a rule's query may run (and at most its period): a heavier one is stopped and
#: logged, so it neither hogs a core nor holds off the collector's shutdown.
MAX_QUERY_S: Final = 60.0
DEFAULT_EVERY_S: Final = 60.0
FIELDS: Final = frozenset({"name", "description", "sql", "window", "every", "threshold", "op"})
_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
#: The longest window or interval a rule may have (a century: longer reaches before year 1).
MAX_DURATION_S: Final = 36_500 * 86_400
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|m|h|d)\s*$")
_UNITS: Final = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
RECENT: Final = "recent_calls"
#: DuckDB's number types (besides ``DECIMAL(p,s)``), matched whole: a substring test let
#: ``INTERVAL``, ``INTEGER[]`` and ``STRUCT(n INTEGER)`` through, and they crashed the collector
NUMERIC_TYPES: Final = frozenset(
    {"TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "FLOAT", "DOUBLE"}
    | {"UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT", "UHUGEINT"}
)


class RuleError(UserError):
    """A rules file that cannot be used; the message names the file, the rule and the field."""


@dataclass(frozen=True)
class Rule:
    name: str
    sql: str
    window_s: float
    threshold: float
    op: str = ">"
    every_s: float = DEFAULT_EVERY_S
    description: str = ""

    def crossed(self, value: float) -> bool:
        return OPERATORS[self.op](value, self.threshold)


def default_rules_path(store: Store) -> Path:
    return store.root / RULES_IN_STORE


def parse_duration(text: Any, where: str) -> float:
    """``"30s"``, ``"10m"``, ``"1.5h"``, ``"1d"`` (or a number of seconds) → seconds."""
    if isinstance(text, bool):
        raise RuleError(f"{where}: a duration like '10m', not {text!r}")
    if isinstance(text, int | float):
        seconds = float(text)
    else:
        found = _DURATION.match(str(text))
        if not found:
            raise RuleError(f"{where}: a duration like '30s', '10m', '1h' or '1d', not {text!r}")
        seconds = float(found.group(1)) * _UNITS[found.group(2)]
    if not math.isfinite(seconds) or seconds <= 0:
        raise RuleError(f"{where}: must be longer than 0 s, not {text!r}")
    if seconds > MAX_DURATION_S:
        raise RuleError(
            f"{where}: must be at most {counted(MAX_DURATION_S // 86400, 'day')}, not {text!r}"
        )
    return seconds


def load_rules(path: Path, store: Store) -> list[Rule]:
    """Every rule of ``path``, each checked (see the module docstring) against ``store``."""
    try:
        document = loads_toml(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise RuleError(f"rules file {path} not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise RuleError(f"rules file {path}: cannot be read ({exc})") from exc
    except tomllib.TOMLDecodeError as exc:
        raise RuleError(f"rules file {path}: not valid TOML ({exc})") from exc
    extra = sorted(set(document) - {"rule"})
    if extra:
        raise RuleError(
            f"rules file {path}: unknown top-level {noun_for(len(extra), 'key')} {extra}; "
            "rules go in [[rule]]"
        )
    entries = document.get("rule", [])
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise RuleError(f"rules file {path}: 'rule' must be a list of tables ([[rule]])")
    rules: list[Rule] = []
    for i, entry in enumerate(entries, 1):
        rule = _rule(entry, f"{path}: rule {i}")
        if any(r.name == rule.name for r in rules):
            raise RuleError(f"{path}: rule {i}: the name {rule.name!r} is used twice")
        rules.append(rule)
    con = _connect(store)
    try:
        for i, rule in enumerate(rules, 1):
            _check_sql(con, rule, f"{path}: rule {i} ({rule.name})")
    finally:
        con.close()
    return rules


def _rule(entry: Mapping[str, Any], where: str) -> Rule:
    unknown = sorted(set(entry) - FIELDS)
    if unknown:
        raise RuleError(
            f"{where}: unknown {noun_for(len(unknown), 'field')} {unknown} "
            f"(fields: {', '.join(sorted(FIELDS))})"
        )
    for required in ("name", "sql", "window", "threshold"):
        if required not in entry:
            raise RuleError(f"{where}: the field {required!r} is missing")
    name = entry["name"]
    if not isinstance(name, str) or not _NAME.match(name):
        raise RuleError(f"{where}: name must be 1-64 letters, digits, '-' or '_', not {name!r}")
    where = f"{where} ({name})"
    sql = entry["sql"]
    if not isinstance(sql, str) or not sql.strip():
        raise RuleError(f"{where}: sql must be a SELECT statement")
    threshold = entry["threshold"]
    if isinstance(threshold, bool) or not isinstance(threshold, int | float):
        raise RuleError(f"{where}: threshold must be a number, not {threshold!r}")
    if not math.isfinite(float(threshold)):
        raise RuleError(f"{where}: threshold must be finite")
    op = entry.get("op", ">")
    if op not in OPERATORS:
        raise RuleError(f"{where}: op must be one of {', '.join(OPERATORS)}, not {op!r}")
    every = parse_duration(entry.get("every", DEFAULT_EVERY_S), f"{where}: every")
    if every < MIN_EVERY_S:
        raise RuleError(f"{where}: every must be at least {MIN_EVERY_S:g} s")
    description = entry.get("description", "")
    if not isinstance(description, str):
        raise RuleError(f"{where}: description must be text")
    return Rule(
        name=name,
        sql=sql.strip(),
        window_s=parse_duration(entry["window"], f"{where}: window"),
        threshold=float(threshold),
        op=op,
        every_s=every,
        description=description,
    )


def _connect(store: Store, now: datetime | None = None, window_s: float = 0.0) -> Any:
    try:
        con = store.connect()
    except StoreError as exc:
        raise RuleError(f"rules: {exc}") from exc
    con.execute("SET TimeZone = 'UTC'")
    lock_down(con, store.root)  # a rule reads the store, never another file (as `sql`)
    _recent(con, now or datetime.now(UTC), window_s)
    return con


def _recent(con: duckdb.DuckDBPyConnection, now: datetime, window_s: float) -> None:
    start = now - timedelta(seconds=window_s)
    con.execute(
        f"CREATE OR REPLACE TEMP VIEW {RECENT} AS SELECT * FROM calls "
        f"WHERE start_time > TIMESTAMPTZ '{start.isoformat()}' "
        f"AND start_time <= TIMESTAMPTZ '{now.isoformat()}'"
    )


def _check_sql(con: duckdb.DuckDBPyConnection, rule: Rule, where: str) -> None:
    try:
        statements = con.extract_statements(rule.sql)
    except duckdb.Error as exc:
        raise RuleError(f"{where}: sql: {one_line(exc)}") from exc
    if len(statements) != 1 or statements[0].type != duckdb.StatementType.SELECT:
        raise RuleError(f"{where}: sql must be exactly one SELECT statement")
    try:
        described = con.sql(f"DESCRIBE {rule.sql}").fetchall()
    except duckdb.Error as exc:
        raise RuleError(f"{where}: sql: {one_line(exc)}") from exc
    types = {str(name): str(kind).upper() for name, kind, *_ in described}
    kind = types.get("value")
    if kind is None:
        raise RuleError(f"{where}: sql must return a column named value (got {sorted(types)})")
    if kind not in NUMERIC_TYPES and not kind.startswith("DECIMAL("):
        raise RuleError(f"{where}: the value column must be numeric, not {kind}")


class RuleEvaluator:
    """Evaluate rules on their schedule and deliver their alerts (see the module docstring).

    ``tick(now)`` runs every rule that is due and returns the alerts raised; nothing here may
    stop the collector: a query that fails at run time is logged and retried next period.
    """

    def __init__(
        self,
        rules: Sequence[Rule],
        store: Store,
        *,
        webhook: str | None = None,
        poster: WebhookPoster | None = None,
    ) -> None:
        self.rules = list(rules)
        self.store = store
        self.poster = poster or (WebhookPoster(webhook) if webhook else None)
        self._next: dict[str, datetime] = {}
        self._above: set[tuple[str, str]] = set()
        self._running: duckdb.DuckDBPyConnection | None = None
        self._interrupted = False
        self.evaluations = 0
        self.failures = 0
        self.alerts_raised = 0

    def tick(self, now: datetime | None = None) -> list[dict[str, Any]]:
        now = now or datetime.now(UTC)
        alerts: list[dict[str, Any]] = []
        for rule in self.rules:
            due = self._next.get(rule.name)
            if due is not None and now < due:
                continue
            self._next[rule.name] = now + timedelta(seconds=rule.every_s)
            alerts += self.evaluate(rule, now)
        if alerts:
            self._deliver(alerts)
        return alerts

    def measure(self, rule: Rule, now: datetime) -> list[tuple[str, float]]:
        """``(key, value)`` of each row of the rule's query at ``now`` (key: the row's other
        columns as JSON, ``""`` when there are none); raises what the query raises."""
        con = _connect(self.store, now, rule.window_s)
        limit = min(rule.every_s, MAX_QUERY_S)
        watchdog = threading.Timer(limit, con.interrupt)
        watchdog.daemon = True
        self._running = con
        try:
            with self.store.reading():  # a compaction's swap would count rows twice or fail
                watchdog.start()
                result = con.sql(rule.sql)
                names = [str(c) for c in result.columns]
                found = result.fetchall()
        except duckdb.InterruptException:
            why = "the collector is stopping" if self._interrupted else f"{limit:g} s at most"
            raise RuleError(f"the query was stopped ({why})") from None
        finally:
            watchdog.cancel()
            self._running = None
            con.close()
        measured = []
        for row in found:
            cells = dict(zip(names, row, strict=True))
            raw = cells.pop("value")
            if raw is not None:
                key = json.dumps(cells, default=str, sort_keys=True) if cells else ""
                try:
                    measured.append((key, float(raw)))
                except (TypeError, ValueError) as exc:  # a value the check did not foresee
                    raise RuleError(f"value is a {type(raw).__name__}, not a number") from exc
        return measured

    def evaluate(self, rule: Rule, now: datetime) -> list[dict[str, Any]]:
        """One evaluation of ``rule`` at ``now``: the alerts of the rows that just crossed."""
        self.evaluations += 1
        try:
            measured = self.measure(rule, now)
        except (duckdb.Error, RuleError, OSError) as exc:
            self.failures += 1
            log.error("rule %s could not be evaluated: %s", rule.name, one_line(exc))
            return []
        alerts = []
        seen: set[str] = set()
        for key, value in measured:
            seen.add(key)
            held = (rule.name, key) in self._above
            if rule.crossed(value):
                if not held:
                    self._above.add((rule.name, key))
                    alerts.append(self._alert(rule, key, value, now))
            elif held:
                self._above.discard((rule.name, key))
        # a key that no longer appears (no calls in the window) has dropped back below
        self._above -= {(r, k) for r, k in self._above if r == rule.name and k not in seen}
        return alerts

    def interrupt(self) -> None:
        """Stop the query running now, if any (the collector's signal handler: a long query
        must not hold off SIGTERM); it is logged as a failed evaluation."""
        con = self._running
        self._interrupted = True
        if con is not None:
            with contextlib.suppress(duckdb.Error):
                con.interrupt()

    def close(self) -> None:
        if self.poster is not None:
            self.poster.close()

    def _alert(self, rule: Rule, key: str, value: float, now: datetime) -> dict[str, Any]:
        return {
            "alert_time": now,
            "rule": rule.name,
            "key": key,
            "value": value,
            "op": rule.op,
            "threshold": rule.threshold,
            "window_s": rule.window_s,
            "description": rule.description,
        }

    def _deliver(self, alerts: list[dict[str, Any]]) -> None:
        self.alerts_raised += len(alerts)
        for alert in alerts:
            log.warning(describe(alert))
        try:
            self.store.append(
                RULE_ALERTS_TABLE, alerts, schema=RULE_ALERTS_SCHEMA, partition_by="alert_time"
            )
        except Exception as exc:  # never stop the collector over an alert write
            log.error(
                "could not store %s in %s: %s",
                counted(len(alerts), "rule alert"),
                self.store.root,
                exc,
            )
        if self.poster is not None:
            self.poster.post([{"kind": "rule", **a} for a in alerts])


def describe(alert: Mapping[str, Any]) -> str:
    """One log line for a rule alert."""
    key = f" {alert['key']}" if alert.get("key") else ""
    window = f"{alert['window_s']:g} s"
    return (
        f"ALERT rule {alert['rule']}{key}: {alert['value']:g} {alert['op']} "
        f"{alert['threshold']:g} (last {window})"
        + (f" — {alert['description']}" if alert.get("description") else "")
    )
