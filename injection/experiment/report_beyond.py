"""Beyond the study's record: the novelty and provenance cues beside the study's headline
statistic, and the cues together as a live scorer watching all of them would alarm.

Beside each cue alone this reports the union ``all·CUSUM ∨ novelty·CUSUM ∨ provenance`` at one
false-alarm level: the provenance cue at its learned thresholds (a normal stream it alarms on
always counts as alarming), and all·CUSUM and novelty·CUSUM each at the threshold of one shared
per-statistic level ``k/n``, the largest ``k`` at which the union stays at or below the target.
Detection uses each run's largest statistic inside its detection window
(``RunOutcomes.window_max``), exactly the window the cells use.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import toolwatch.injection.experiment.metrics as M
from toolwatch.injection.experiment.formats import label, pct
from toolwatch.injection.experiment.results import HEADLINE, NORMAL, ExperimentResult
from toolwatch.injection.spans.kinds import ANOMALY_KINDS, PROVENANCE_KINDS

#: statistics beyond the study's cue sets, in report order (those present are shown)
BEYOND: tuple[tuple[str, str], ...] = (
    ("novelty", "point"),
    ("novelty", "cusum"),
    ("provenance", "point"),
)


def union_figures(
    result: ExperimentResult, variant: str = "standard", *, provenance: bool = True
) -> dict[str, Any] | None:
    """The union (module docstring): its thresholds, the level reached and the detection rate
    per kind; ``None`` when the runs hold no statistic beyond the study's."""
    runs = {r.kind: r for r in result.runs if r.variant == variant}
    normal = runs.get(NORMAL)
    if normal is None:
        return None
    free = [
        s for s in (HEADLINE, ("novelty", "point"), ("novelty", "cusum")) if s in normal.window_max
    ]
    fixed = [s for s in (("provenance", "point"),) if provenance and s in normal.window_max]
    if len(free) + len(fixed) < 2:
        return None
    fixed_thr = {s: result.thresholds[(variant, *s, "operating_point")].value for s in fixed}
    n = len(normal.seed)
    target = result.config.target_fa
    best: tuple[dict[tuple[str, str], float], float] | None = None
    for k in range(n + 1):
        thr = {s: M.threshold_for_false_alarm(normal.window_max[s], k / n).threshold for s in free}
        alarm = np.zeros(n, dtype=bool)
        for s, t in (*thr.items(), *fixed_thr.items()):
            alarm |= normal.window_max[s] > t
        if best is None or alarm.mean() <= target + 1e-12:
            best = (thr, float(alarm.mean()))  # k = 0 is kept even above the target
        if alarm.mean() > target + 1e-12:
            break
    assert best is not None
    thresholds = {**best[0], **fixed_thr}
    rates: dict[str, float] = {}
    for kind, r in runs.items():
        if kind == NORMAL or not len(r.seed) or any(s not in r.window_max for s in thresholds):
            continue
        hit = np.zeros(len(r.seed), dtype=bool)
        for s, t in thresholds.items():
            hit |= r.window_max[s] > t
        rates[kind] = float(hit.mean())
    return {
        "members": [f"{c}·{d}" for c, d in thresholds],
        "thresholds": {f"{c}·{d}": t for (c, d), t in thresholds.items()},
        "fa_reached": best[1],
        "alarming": round(best[1] * n),
        "streams": n,
        "rates": rates,
    }


def beyond_section(result: ExperimentResult) -> str | None:
    """The text section, in the report's formats; ``None`` when no statistic beyond the
    study's was measured."""
    present = [s for s in BEYOND if ("standard", *s, "operating_point") in result.thresholds]
    if not present:
        return None
    n = result.split["test"][0]
    kinds = [k for k in (*ANOMALY_KINDS, *PROVENANCE_KINDS) if k in result.config.kinds]
    unions: list[dict[str, Any]] = []
    for with_provenance in (False, True):
        found = union_figures(result, provenance=with_provenance)
        if found is not None and found["members"] not in [u["members"] for u in unions]:
            unions.append(found)
    header = ["kind", "all·CUSUM"]
    levels = []
    for cue, det in present:
        modes = (("operating_point", "learned thresholds"),) if cue == "provenance" else ()
        for mode, what in (*modes, ("fa_target", "fa target")):
            t = result.thresholds[("standard", cue, det, mode)]
            header.append(f"{cue}·{det} ({what})")
            levels.append(
                f"{cue}·{det} at its {what}: {pct(t.fa_reached, 1)} = "
                f"{round(t.fa_reached * n)}/{n} normal test streams"
            )
    for union in unions:
        name = " ∨ ".join(union["members"])
        header.append(name)
        shown = ", ".join(f"{m} {t:.2f}" for m, t in union["thresholds"].items())
        levels.append(
            f"{name} (thresholds {shown}): "
            f"{pct(union['fa_reached'], 1)} = {union['alarming']}/{union['streams']}"
        )
    rows = []
    for kind in kinds:
        c = result.cell(kind, *HEADLINE)
        row = [label(kind), pct(c.rate) if c else "–"]
        for cue, det in present:
            for mode in ("operating_point", "fa_target") if cue == "provenance" else ("fa_target",):
                cell = result.cell(kind, cue, det, mode=mode)
                row.append(pct(cell.rate) if cell else "–")
        for union in unions:  # whole percents, as every detection rate of the report
            rate = union["rates"].get(kind)
            row.append("–" if rate is None else pct(rate))
        rows.append(row)
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)).rstrip()]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    foot = "false alarms: " + "; ".join(levels)
    if any(k in result.config.kinds for k in PROVENANCE_KINDS):
        foot += (
            "\nthe study's kinds insert calls without provenance (not measured: they never "
            "alarm the provenance cue); exfil_<payload>_<encoding> carry it (key 40 B, "
            "document 400 B, file 3 KB)"
        )
    rule = result.config.model.get("provenance_rule", "capped")
    named = ", ".join(f"{k}={v}" for k, v in sorted(result.config.model.items()))
    return (
        "Beyond the study's record — the novelty cue (first uses mid-stream, weighted by "
        "training rarity) and, where calls carry provenance, the provenance cue "
        f"(per-egress-class payload thresholds, rule {rule}) beside all cues + CUSUM"
        + (f" [model: {named}]" if named else "")
        + "\n"
        + "\n".join(lines)
        + "\n"
        + foot
    )
