"""The replay's report: the text ``toolwatch replay`` prints, its ``--json``, and the cells the
dashboard's Replay page shows — all from one JSON-ready summary (:func:`summary`), the one
:mod:`.replay_storage` saves and reads back, so the page shows the very strings the command
printed for that run.

Shares are written as the experiment writes the same kind of number (:mod:`.formats`):
detection of the injected copies as a whole percent (``98%``, as the experiment's detection
tables), a level of normal streams alarming with one decimal (``3/31 9.7%``, as its ``4.7% =
3/64 streams``) and 95 % intervals in whole percents; a half is rounded up, as by hand
(:func:`~.formats.percent`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Final

from toolwatch.detection import ModelConfig
from toolwatch.detection.alerting import CLOCK_AHEAD_S
from toolwatch.detection.calls.split import placed_by_arrival_line
from toolwatch.injection.experiment.config import THIN_TEST
from toolwatch.injection.experiment.formats import (
    num,
    pct,
    percent,
    target_pct,
    threshold_text,
)
from toolwatch.injection.experiment.replay import (
    BEYOND_P,
    MODELS,
    THIN_WEEK,
    ReplayConfig,
    ReplayResult,
)
from toolwatch.words import counted

#: Column names of the kinds in the weekly table (the full names are long).
SHORT: Final[dict[str, str]] = {
    "burst": "burst",
    "runaway_retry": "runaway",
    "control_same_response_burst": "ctl-SR",
    "control_other_normal": "ctl-8",
    "out_of_scope_tool": "OOS",
}


def short(kind: str) -> str:
    return SHORT.get(kind, kind)


def summary(result: ReplayResult) -> dict[str, Any]:
    """JSON-ready results (``--json``; what the store keeps, :mod:`.replay_storage`)."""

    def pairs(d: Mapping[str, Sequence[int]]) -> dict[str, list[int]]:
        return {k: list(v) for k, v in d.items()}

    def level(o: Mapping[str, Any] | None) -> dict[str, Any] | None:
        return None if o is None else {**o, "detection": pairs(o["detection"])}

    return {
        "run_id": result.run_id,
        "created": result.created.isoformat(),
        "config": result.config.to_dict(),
        "split": result.split,
        "weeks": [
            {
                "week": r.week,
                "streams": r.normal,
                "thin": r.normal < THIN_WEEK,
                "alarmed": r.alarmed,
                "threshold": {m: (None if math.isnan(v) else v) for m, v in r.threshold.items()},
                "detection": {m: pairs(d) for m, d in r.detection.items()},
            }
            for r in result.weeks
        ],
        "totals": {
            m: {
                **t,
                "detection": pairs(t["detection"]),
                "oracle": {
                    **t["oracle"],
                    "detection": pairs(t["oracle"]["detection"]),
                    "next_level": level(t["oracle"].get("next_level")),
                },
            }
            for m, t in result.totals.items()
        },
    }


# ------------------------------------------------------------------------------ cells


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """95 % Wilson interval of k/n."""
    if n == 0:
        return (math.nan, math.nan)
    p = k / n
    den = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / den
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / den
    return (max(0.0, centre - half), min(1.0, centre + half))


def detection_text(hits: Sequence[int]) -> str:
    """Copies detected of copies, as the experiment writes a detection rate (``98%``; ``–``
    for none)."""
    k, n = hits
    return pct(k / n if n else None)


def alarm_text(k: int, n: int, *, interval: bool = False) -> str:
    """Normal streams alarming, as the experiment writes a level (``3/31 9.7%``), with the
    95 % Wilson interval when asked (``3/31 9.7% (3–25%)``)."""
    shown = f"{k}/{n} {pct(k / n if n else None, 1)}"
    if interval and n:
        lo, hi = wilson(k, n)
        shown += f" ({percent(lo)}–{percent(hi)}%)"
    return shown


def week_cells(data: Mapping[str, Any], week: Mapping[str, Any], model: str) -> list[str]:
    """One model's cells of a week's row: alarming (the adaptive model's with its interval),
    the threshold at the week's end, then each kind's detection."""
    k, n = week["alarmed"][model], week["streams"]
    return [
        alarm_text(k, n, interval=model == "adaptive"),
        num(week["threshold"][model]),
        *(detection_text(week["detection"][model][kind]) for kind in kinds_of(data)),
    ]


def total_cells(data: Mapping[str, Any], model: str) -> list[str]:
    """One model's cells of the ``all`` row (no threshold: it moves with the weeks)."""
    t = data["totals"][model]
    return [
        alarm_text(t["alarmed"], t["streams"], interval=model == "adaptive"),
        "",
        *(detection_text(t["detection"][kind]) for kind in kinds_of(data)),
    ]


def kinds_of(data: Mapping[str, Any]) -> list[str]:
    return list(data["config"]["replay_kinds"])


def week_name(week: Mapping[str, Any]) -> str:
    return week["week"] + (" thin" if week["thin"] else "")


def week_table(data: Mapping[str, Any]) -> tuple[list[str], list[list[str]]]:
    """The weekly table's header and rows (the last row: ``all``)."""
    kinds = [short(k) for k in kinds_of(data)]
    head = [
        "week",
        "streams",
        "adaptive: alarming (95% CI)",
        "threshold",
        *kinds,
        "frozen: alarming",
        "threshold",
        *kinds,
    ]
    rows = []
    for w in data["weeks"]:
        cells = [week_name(w), str(w["streams"])]
        for model in MODELS:
            cells += week_cells(data, w, model)
        rows.append(cells)
    total = ["all", str(data["totals"]["adaptive"]["streams"])]
    for model in MODELS:
        total += total_cells(data, model)
    rows.append(total)
    return head, rows


def beyond_text(weeks: Sequence[Mapping[str, Any]]) -> str:
    """``2 (2026-02-09: 5/7, p = 0.00018; …)``."""
    return f"{len(weeks)}" + (f" ({'; '.join(map(p_text, weeks))})" if weeks else "")


def p_text(week: Mapping[str, Any]) -> str:
    """A week above 2× the target beyond chance: ``2026-02-09: 5/7, p = 0.00018``."""
    return f"{week['week']}: {week['alarmed']}/{week['streams']}, {p_value(week['p'])}"


def p_value(p: float) -> str:
    """``p = 0.00018``."""
    return f"p = {p:.2g}"


def level_text(level: Mapping[str, Any], streams: int) -> str:
    """A one-threshold level: normal streams alarming at it and the threshold (``1/31,
    7.41``), the numbers :func:`oracle_line` prints."""
    return f"{level['alarmed']}/{streams}, {threshold_text(level['threshold'])}"


def over_line(data: Mapping[str, Any], model: str) -> str:
    """The weeks after the first above 2× the target, and which are beyond chance."""
    target = data["config"]["experiment"]["target_fa"]
    t = data["totals"][model]
    over, full = t["weeks_over_2x_target"], t["full_weeks_over_2x_target"]
    return (
        f"{model}: weeks after the first with more than 2× the target "
        f"({target_pct(2 * target)}) of their streams alarming: "
        f"{len(over)} of {len(data['weeks']) - 1}"
        + (f" ({', '.join(over)})" if over else "")
        + f"; of them with ≥ {THIN_WEEK} streams: {len(full)}"
        + f"; above it beyond chance (one-sided binomial test, p < {BEYOND_P:g}): "
        + beyond_text(t["weeks_over_2x_target_beyond_chance"])
    )


def rates_text(detection: Mapping[str, Sequence[int]]) -> str:
    """``burst 98%, runaway 77%``."""
    return ", ".join(f"{short(k)} {detection_text(v)}" for k, v in detection.items())


def oracle_line(data: Mapping[str, Any], model: str) -> str:
    """Detection at one threshold for the whole replay (the experiment's rule), and at the
    next level above the target on a thin split."""
    o = data["totals"][model]["oracle"]
    n = data["totals"][model]["streams"]
    line = (
        f"{model}, at one threshold for the whole replay (the experiment's rule: "
        f"{o['alarmed']}/{counted(n, 'normal stream')} alarm, {threshold_text(o['threshold'])}): "
        f"{rates_text(o['detection'])}"
    )
    if (up := o.get("next_level")) is not None:
        line += (
            f"; fewer than {THIN_TEST} normal streams, so also at the next level above the "
            f"target ({up['alarmed']}/{n} alarm, {threshold_text(up['threshold'])}): "
            f"{rates_text(up['detection'])}"
        )
    return line


def counts_line(data: Mapping[str, Any]) -> str:
    c = data["totals"]["adaptive"]["counts"]
    return (
        f"adaptive model: {counted(c['folded'], 'stream')} folded in "
        f"({counted(c['folded_calls'], 'call')}), {counted(c['pooled'], 'maximum', 'maxima')} "
        f"pooled, {counted(c['refreshes'], 'snapshot')}; a week marked thin has "
        f"fewer than {THIN_WEEK} streams (one alarm there is already 1/n)"
    )


def artefact_lines(data: Mapping[str, Any]) -> list[str]:
    """The flagged client artefacts of the test split: replayed like every stream, never
    folded, pooled or counted among the normal streams, and how the long ones alarmed (as the
    experiment's notes say it); none for a run saved before they were counted."""
    min_calls = data["config"]["experiment"]["min_calls"]
    lines = []
    quirks = data["totals"][MODELS[0]].get("artefacts", {})
    for quirk, a in quirks.items():
        alarmed = ", ".join(
            f"{data['totals'][m]['artefacts'][quirk]['alarmed']} ({m})" for m in MODELS
        )
        lines.append(
            f"client artefact {quirk}: {a['streams']:,} in the test split "
            f"({counted(a['calls'], 'call')}) "
            "— replayed, never folded, pooled or counted among the normal streams"
            + (
                f"; of the {a['long']:,} with ≥ {counted(min_calls, 'call')}, alarmed: {alarmed}"
                if a["long"]
                else ""
            )
        )
    return lines


def model_knobs(config: ReplayConfig) -> dict[str, Any]:
    """The model's knobs set away from their defaults (the header names them)."""
    default = ModelConfig().to_dict()
    resolved = ModelConfig.from_dict(dict(config.experiment.model)).to_dict()
    return {k: v for k, v in sorted(resolved.items()) if default.get(k) != v}


def header(data: Mapping[str, Any]) -> list[str]:
    """What was replayed, the model and the adaptive part's knobs."""
    cfg = ReplayConfig.from_dict(data["config"])
    split = data["split"]
    target = cfg.experiment.target_fa
    a = cfg.adaptive
    half = "no decay" if math.isinf(a.half_life_days) else f"half-life {a.half_life_days:g} d"
    if a.floor_streams and not math.isinf(a.half_life_days):
        half += f" (floor {a.floor_streams:g} streams)"
    kept_apart = sum(groups.get("test", [0])[0] for groups in split.get("artefacts", {}).values())
    lines = [
        f"toolwatch replay — {counted(split['replayed_streams'], 'test-split stream')} "
        f"({split['test'][0]} normal with ≥ {counted(cfg.experiment.min_calls, 'call')}"
        + (f", {counted(kept_apart, 'client artefact')} reported apart" if kept_apart else "")
        + ") replayed in time order "
        "through the live scorer, with "
        f"{counted(split['injected_copies'], 'injected copy', 'injected copies')} "
        f"({', '.join(cfg.replay_kinds)}; {counted(len(cfg.experiment.seeds), 'seed')})",
        f"model fitted on {counted(split['train'][0], 'stream')}, calibrated on "
        + (
            f"{split['calibration'][0]:,}"
            if split["calibration"][0]
            else "the same (the calibration split is empty)"
        )
        + "".join(f", {k}={v}" for k, v in model_knobs(cfg).items())
        + f"; watched: {cfg.statistic}, target {target_pct(target)} of streams alarming",
        f"adaptive: {half}, quarantine {a.quarantine_h:g} h, idle {a.idle_min:g} min, novelty "
        f"until {a.novelty_streams:g} streams, threshold = the {target_pct(1 - target)} quantile "
        f"of the last {a.window} stream maxima (river RollingQuantile); frozen: the same model at "
        "its operating point (what the collector alerts on without --adaptive)",
    ]
    placed = [line for line in [placed_by_arrival_line(split)] if line]
    return lines[:1] + placed + ahead_lines(split) + lines[1:]


def ahead_lines(split: Mapping[str, Any]) -> list[str]:
    """The calls stamped ahead of their arrival mark or of the corpus, as the collector's guard
    treats them (none for a run without any, or saved before they were counted)."""
    guard = f"{CLOCK_AHEAD_S / 60:g} min"
    marked, ahead = split.get("stamped_ahead_of_arrival", 0), split.get("stamped_ahead", 0)
    lines = []
    if marked:
        one = marked == 1
        lines.append(
            _ahead_line(
                marked,
                f"{'its' if one else 'their'} arrival (more than {guard} after the collector "
                f"received {'it' if one else 'them'}, received_time): replayed when "
                f"{'it' if one else 'they'} arrived",
            )
        )
    if ahead:
        one = ahead == 1
        lines.append(
            _ahead_line(
                ahead,
                f"the corpus (more than {guard} after a later call of {'its' if one else 'their'}"
                f" own stream): replayed where {'it' if one else 'they'} arrived",
            )
        )
    return lines


def _ahead_line(n: int, ahead_of: str) -> str:
    """One kind of call stamped ahead: ``n`` calls stamped ahead of ``ahead_of``, then what the
    replay does with them, which is the collector's guard whichever clock caught them."""
    one = n == 1
    return (
        f"{counted(n, 'call')} stamped ahead of {ahead_of} and handled as the collector handles "
        f"a call stamped ahead of its clock — scored, {'its' if one else 'their'} time moving no "
        f"stream's clock, {'its stream' if one else 'their streams'} never learnt"
    )


def render(data: ReplayResult | Mapping[str, Any]) -> str:
    """The replay as text (a result, or its :func:`summary` as the store gives it back): per
    week beside the frozen model, then the totals."""
    if isinstance(data, ReplayResult):
        data = summary(data)
    lines = [*header(data), ""]
    head, rows = week_table(data)
    widths = [max(len(x[i]) for x in [head, *rows]) for i in range(len(head))]
    lines.append("  ".join(h.ljust(w) for h, w in zip(head, widths, strict=True)).rstrip())
    lines.append("  ".join("-" * w for w in widths))
    for row in rows:
        lines.append("  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)).rstrip())
    lines.append("")
    lines += [over_line(data, m) for m in MODELS]
    lines += [oracle_line(data, m) for m in MODELS]
    lines.append(counts_line(data))
    lines += artefact_lines(data)
    secs = {m: data["totals"][m]["seconds"] for m in MODELS}
    calls = data["totals"]["adaptive"]["calls"]
    lines.append(
        "replay time: "
        + ", ".join(f"{m} {s:.1f} s ({calls / s:,.0f} calls/s)" for m, s in secs.items())
    )
    return "\n".join(lines) + "\n"
