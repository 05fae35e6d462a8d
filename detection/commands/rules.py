"""``toolwatch rules``: alert rules beyond the model (SQL over recent calls, a threshold).

    toolwatch rules example > STORE/rules.toml     # a file to start from
    toolwatch rules check [FILE] [--store S] [--at TIME]

``check`` validates every rule of the file (default ``STORE/rules.toml``) as the collector
does before it starts, then evaluates each once — now, or at ``--at`` (an ISO time, to try a
rule on an older store) — and prints what each row measured and whether it would fire. The
format and the delivery are described in :mod:`toolwatch.detection.alerting.rules`; the
collector evaluates the same file on each rule's schedule.
"""

from __future__ import annotations

import argparse
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from toolwatch.collector.store.location import add_store_argument
from toolwatch.usage import UsageError
from toolwatch.words import counted

if TYPE_CHECKING:  # imported when the command runs: `rules --help` needs no DuckDB or Arrow
    from toolwatch.detection.alerting.rules import Rule, RuleEvaluator

HELP = "validate and try alert rules (SQL with a threshold)"

EXAMPLE = '''# toolwatch alert rules: evaluated by `toolwatch collector` on their schedule
# (this file in the store is found by default; `toolwatch rules check` tries it)

[[rule]]
name = "tool-failing"
description = "one tool failed more than 5 times in 10 minutes"
window = "10m"
every = "1m"
threshold = 5
sql = """
SELECT tool, count(*) AS value
FROM recent_calls
WHERE failed
GROUP BY tool
"""

[[rule]]
name = "silent-collector"
description = "no call arrived for an hour"
window = "1h"
every = "5m"
op = "<"
threshold = 1
sql = "SELECT count(*) AS value FROM recent_calls"
'''


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    check = sub.add_parser("check", help="validate a rules file and evaluate it once")
    check.add_argument("file", nargs="?", help="rules file (default STORE/rules.toml)")
    add_store_argument(check)
    check.add_argument(
        "--at", metavar="TIME", help="evaluate as of this ISO time (default: now), UTC"
    )
    sub.add_parser("example", help="print an example rules file")


def run(args: argparse.Namespace) -> int:
    if args.action == "example":
        print(EXAMPLE, end="")
        return 0
    from toolwatch.collector.store.parquet_store import Store
    from toolwatch.collector.store.result_formats import render, text_table
    from toolwatch.detection.alerting.rules import RuleEvaluator, default_rules_path, load_rules

    store = Store(args.store)
    store.require_existing()
    path = Path(args.file) if args.file else default_rules_path(store)
    now = _moment(args.at)
    rules = load_rules(path, store)
    evaluator = RuleEvaluator(rules, store)
    rows = []
    for rule in rules:
        for row in _measure(evaluator, rule, now):
            rows.append(row)
    print(f"{path}: {counted(len(rules), 'rule')}, valid; evaluated at {now:%Y-%m-%d %H:%M:%S} UTC")
    columns = [("rule", False), ("measured", False), ("value", True), ("test", False)]
    columns.append(("fires", False))
    print(render(text_table(columns, rows)).rstrip("\n"))
    return 0


def _measure(evaluator: RuleEvaluator, rule: Rule, now: datetime) -> list[list[str]]:
    """The rule's rows at ``now`` (``fires``: the value is past the threshold)."""
    values = evaluator.measure(rule, now)
    if not values:
        return [[rule.name, "(no rows)", "", f"{rule.op} {rule.threshold:g}", "no"]]
    return [
        [
            rule.name,
            key or "-",
            f"{value:g}",
            f"{rule.op} {rule.threshold:g}",
            "YES" if rule.crossed(value) else "no",
        ]
        for key, value in values
    ]


def _moment(text: str | None) -> datetime:
    if not text:
        return datetime.now(UTC)
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise UsageError(f"--at {text!r} is not an ISO time (e.g. 2026-08-20T12:00)") from None
    moment = moment if moment.tzinfo else moment.replace(tzinfo=UTC)
    if not _FIRST_MOMENT <= moment <= _LAST_MOMENT:  # a window before it, or a next run after it
        raise UsageError(f"--at {text!r} is outside 1970-01-01 to 9900-12-31")
    return moment


_FIRST_MOMENT = datetime(1970, 1, 1, tzinfo=UTC)
_LAST_MOMENT = datetime(9900, 12, 31, tzinfo=UTC)
