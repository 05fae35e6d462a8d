"""The experiment's results as the study's tables, each beside the published numbers.

Everything here reads an :class:`~toolwatch.injection.experiment.results.ExperimentResult` and
:mod:`toolwatch.study`; nothing is recomputed from calls. :func:`summary` gives the same
content as a JSON-ready dict for ``--json`` and the dashboard.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Collection, Mapping
from dataclasses import asdict
from typing import Any

import numpy as np

from toolwatch import study
from toolwatch.detection import DETECTORS
from toolwatch.detection.calls.split import placed_by_arrival_line
from toolwatch.injection.experiment.config import THIN_TEST
from toolwatch.injection.experiment.formats import label, num, pct, rate_ci, target_pct
from toolwatch.injection.experiment.levels import (
    alarming,
    fa_header,
    fa_sentence,
    thin_calibration_warning,
    thin_warning,
)
from toolwatch.injection.experiment.report_beyond import beyond_section
from toolwatch.injection.experiment.results import (
    HEADLINE,
    CellResult,
    ExperimentResult,
    finite,
)
from toolwatch.injection.experiment.split import split_rows
from toolwatch.injection.experiment.validity import (
    control_breaches,
    control_note,
    reacts_to_insertion,
)
from toolwatch.injection.spans.contract import NOTE_MID_RESPONSE, NOTE_READ_PAIR
from toolwatch.injection.spans.kinds import ALL_KINDS, ANOMALY_KINDS
from toolwatch.injection.spans.provenance_exfiltration import NOTE_PAYLOAD_CUT
from toolwatch.words import counted

SINGLE_CUES: tuple[str, ...] = ("time", "failure", "order", "size")


def _kinds(result: ExperimentResult) -> list[str]:
    return [k for k in ALL_KINDS if k in result.config.kinds]


def best_detector_per_cue(
    result: ExperimentResult,
    variant: str = "standard",
    *,
    exclude: Collection[tuple[str, str]] = (),
) -> dict[str, str]:
    """Per single cue, the detector with the highest mean detection over the anomaly kinds
    (the study reports each cue with one detector: its best); a ``(cue, detector)`` in
    ``exclude`` (e.g. its controls breach, :mod:`.validity`) only when all of the cue's are."""
    out: dict[str, str] = {}
    kinds = [k for k in _kinds(result) if k in ANOMALY_KINDS]
    for cue in SINGLE_CUES:
        ranks = []
        for det in DETECTORS:
            rates = [c.rate for k in kinds if (c := result.cell(k, cue, det, variant=variant))]
            ranks.append(((cue, det) not in exclude, float(np.nanmean(rates)) if rates else -1.0))
        out[cue] = DETECTORS[max(range(len(DETECTORS)), key=ranks.__getitem__)]
    return out


def best_single_cue(
    result: ExperimentResult,
    kind: str,
    variant: str = "standard",
    *,
    exclude: Collection[tuple[str, str]] = (),
) -> tuple[str, str, float] | None:
    """(cue, detector, rate) of the single cue × detector that detects ``kind`` best, leaving
    out the ``(cue, detector)`` pairs in ``exclude`` (e.g. those whose controls breach)."""
    best: tuple[str, str, float] | None = None
    for cue in SINGLE_CUES:
        for det in DETECTORS:
            c = result.cell(kind, cue, det, variant=variant)
            if (cue, det) in exclude or c is None or math.isnan(c.rate):
                continue
            if best is None or c.rate > best[2]:
                best = (cue, det, c.rate)
    return best


def louder_single_cue(
    result: ExperimentResult, kind: str, best: tuple[str, str, float] | None
) -> tuple[str, str, float] | None:
    """The single cue that detects ``kind`` better than ``best`` (the best whose controls stay
    quiet), which can only be one whose controls breach: the report's †; ``None`` if none."""
    loud = best_single_cue(result, kind)
    return loud if loud and (best is None or loud[2] > best[2]) else None


def _best_single_text(
    result: ExperimentResult, kind: str, breached: Collection[tuple[str, str]]
) -> str:
    """The best single cue whose controls stay quiet, and beside it (†) a better one whose
    controls breach."""
    best = best_single_cue(result, kind, exclude=breached)
    text = f"{best[0]}·{best[1]} {pct(best[2])}" if best else "–"
    if loud := louder_single_cue(result, kind, best):
        text += f" ({loud[0]}·{loud[1]} {pct(loud[2])} †)"
    return text


def headline_breach(breached: Mapping[tuple[str, str], CellResult]) -> str | None:
    """The warning under the headline when all·CUSUM itself reacts to the insertion."""
    b = breached.get(HEADLINE)
    if b is None:
        return None
    return (
        f"warning: {reacts_to_insertion('all·CUSUM', b)}, so the rates above overstate "
        "detection of the anomalies"
    )


def _table(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)).rstrip()]
    lines.append("  ".join("-" * w for w in widths))
    for r in rows:
        lines.append("  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)).rstrip())
    return "\n".join(lines)


def headline(result: ExperimentResult) -> str:
    """The headline table alone (``toolwatch demo``): all cues + CUSUM at the target
    false-alarm rate, beside the study's published numbers, with a legend for newcomers.

    Its latency column is all·CUSUM's; the study published latencies only for a single cue
    per kind, so the legend gives ours at that very cue beside them (never mixed up).
    """
    cfg = result.config
    n_test, test_calls = result.split["test"]
    rows = []
    for kind in _kinds(result):
        c = result.cell(kind, *HEADLINE)
        pub = study.DETECTION_ALL_CUSUM.get(kind)
        rows.append(
            [
                label(kind),
                rate_ci(c.rate, c.ci_low, c.ci_high) if c else "–",
                rate_ci(*pub) if pub else "–",
                num(c.auc) if c else "–",
                num(study.AUC.get(kind)),
                num(c.median_latency, "{:g}") if c else "–",
            ]
        )
    header = ["kind", "ours (95% CI)", "study", "AUC ours", "study", "latency all·CUSUM"]
    legend = [
        f"ours: share of the {len(cfg.seeds)} × {counted(n_test, 'injected run')} per kind with an "
        "alarm "
        "within max(#inserted, 10) + 10 calls of the insertion point; study: the published "
        f"figure ({counted(study.SPLITS['test'][0], 'test session')} × 5 seeds; the study counted "
        "each "
        "subagent as a session: a stream)",
        "AUC: per call, injected calls vs all other calls, ranked by the all-cue score "
        "(0.5 = chance)",
        "latency: median calls from the insertion point to the first all·CUSUM alarm, over "
        "the detected runs (1 = the first injected call)",
    ]
    text = "\n".join(textwrap.fill(x, 100, subsequent_indent="  ") for x in legend)
    shown = [k for k in study.LATENCY if k in cfg.kinds]
    if shown:
        text += "\n  the study published latencies for one single cue only (not all·CUSUM):"
    for kind in shown:
        calls, cue, det = study.LATENCY[kind]
        c = result.cell(kind, cue, det)
        ours = num(c.median_latency, "{:g}") if c else "–"
        text += f"\n    {label(kind)}: study {calls}, ours {ours} (both {cue}·{det})"
    breach = headline_breach(control_breaches(result))
    warnings = (thin_warning(result), thin_calibration_warning(result), breach)
    warning = "\n".join(w for w in warnings if w)
    return (
        f"Detection {fa_header(result)}, all cues + CUSUM — "
        f"{counted(len(cfg.seeds), 'seed')} × {counted(n_test, 'test stream')} "
        f"({counted(test_calls, 'call')}) per kind\n"
        + _table(header, rows)
        + "\n"
        + text
        + (f"\n{warning}" if warning else "")
    )


def render(result: ExperimentResult) -> str:
    """All tables as text (stdout of ``toolwatch experiment``)."""
    cfg = result.config
    split = result.split
    n_test = split["test"][0]
    runs_per_kind = n_test * len(cfg.seeds)
    parts: list[str] = []
    how = (
        f"by dates: train ≤ {split['train_end']}, calibration ≤ {split['calibration_end']}"
        if split.get("mode") == "dates"
        else f"by shares of the streams ordered by first call: {split.get('shares')}"
    )
    rows = [
        [
            r.name,
            f"{r.streams:,} / {r.calls:,}",
            "–" if r.study is None else f"{r.study[0]} / {r.study[1]:,}",
        ]
        for r in split_rows(split, cfg.min_calls)
    ]
    parts.append(
        f"toolwatch experiment {result.run_id} — streams starting "
        f"{split.get('streams_span', '?')}, "
        f"split {how}{' (the default rule)' if split.get('default') else ''}\n"
        + "".join(f"{line}\n" for line in [placed_by_arrival_line(split)] if line)
        + _table(["split", "ours (streams / calls)", "study (sessions / calls)"], rows)
    )
    fa_all = fa_sentence(result, *HEADLINE)
    parts.append(
        f"Runs: {counted(len(cfg.seeds), 'seed')} × {counted(n_test, 'test stream')} "
        f"= {runs_per_kind} per kind; "
        + (
            f"95 % intervals from {counted(cfg.bootstrap, 'bootstrap resample')} of streams "
            f"(seed {cfg.bootstrap_seed}).\n"
            if cfg.bootstrap
            else "no intervals (--bootstrap 0).\n"
        )
        + f"False alarms: target {target_pct(cfg.target_fa)} of normal test streams; the largest "
        f"reachable level not above it (one threshold grid shared with the injected runs) "
        f"is, for all cues × CUSUM, {fa_all}."
        + "".join(f"\n{w}" for w in (thin_warning(result), thin_calibration_warning(result)) if w)
    )

    # headline
    breached = control_breaches(result)
    thin = n_test < THIN_TEST and ("standard", *HEADLINE, "fa_next") in result.thresholds
    rows = []
    for kind in _kinds(result):
        c = result.cell(kind, *HEADLINE)
        pub = study.DETECTION_ALL_CUSUM.get(kind)
        pub_single = study.DETECTION_SINGLE_CUE.get(kind)
        row = [label(kind), rate_ci(c.rate, c.ci_low, c.ci_high) if c else "–"]
        if thin:
            up = result.cell(kind, *HEADLINE, mode="fa_next")
            row.append(rate_ci(up.rate, up.ci_low, up.ci_high) if up else "–")
        ewma = result.cell(kind, "all", "ewma")
        row.append(pct(ewma.rate) if ewma else "–")
        rows.append(
            [
                *row,
                rate_ci(*pub) if pub else "–",
                _best_single_text(result, kind, breached),
                f"{pub_single[0]} {pct(pub_single[1])}" if pub_single else "",
                num(c.auc) if c else "–",
                num(study.AUC.get(kind)),
            ]
        )
    ours = ["ours (95% CI)"]
    if thin:
        ours = [
            f"at {fa_sentence(result, *HEADLINE)}",
            f"at {fa_sentence(result, *HEADLINE, mode='fa_next')}",
        ]
    parts.append(
        f"Detection {fa_header(result)} — all cues + CUSUM "
        f"(all·EWMA beside it: {fa_sentence(result, 'all', 'ewma')})\n"
        + _table(
            [
                "kind",
                *ours,
                "all·EWMA",
                "study (95% CI)",
                "best single cue (ours)",
                "study",
                "AUC ours",
                "study",
            ],
            rows,
        )
        + (f"\n{breach}" if (breach := headline_breach(breached)) else "")
        + (
            "\n† detects a control above the false-alarm level too: it reacts to the insertion "
            "itself (Notes)"
            if breached
            else ""
        )
    )

    beyond = beyond_section(result)
    if beyond:
        parts.append(beyond)

    # single cues
    best_det = best_detector_per_cue(result, exclude=breached)
    header = [
        "kind",
        *(
            f"{cue}·{best_det[cue]}" + (" †" if (cue, best_det[cue]) in breached else "")
            for cue in SINGLE_CUES
        ),
    ]
    rows = []
    for kind in _kinds(result):
        row = [label(kind)]
        for cue in SINGLE_CUES:
            c = result.cell(kind, cue, best_det[cue])
            row.append(pct(c.rate) if c else "–")
        rows.append(row)
    fa_line = ", ".join(
        f"{cue}·{best_det[cue]} {fa_sentence(result, cue, best_det[cue])}" for cue in SINGLE_CUES
    )
    parts.append(
        "Single cue, each with its best detector over the anomaly kinds "
        "(study: time/failure/order EWMA, size point; false alarms reached 3.1–4.7 %)\n"
        + _table(header, rows)
        + f"\nfalse alarms reached: {fa_line}"
        + (
            "\n† every detector of this cue reacts to the insertion itself (see Notes)"
            if any((cue, best_det[cue]) in breached for cue in SINGLE_CUES)
            else ""
        )
    )

    # latency
    rows = []
    for kind, (calls, cue, det) in study.LATENCY.items():
        if kind not in result.config.kinds:
            continue
        c = result.cell(kind, cue, det)
        h = result.cell(kind, *HEADLINE)
        rows.append(
            [
                label(kind),
                f"{num(c.median_latency, '{:g}') if c else '–'} ({cue}·{det}, "
                f"detected {pct(c.rate) if c else '–'})",
                f"{num(h.median_latency, '{:g}') if h else '–'}",
                f"{calls} ({cue}·{det})",
            ]
        )
    parts.append(
        "Median latency, calls from the insertion point to the first alarm (1 = the first "
        "injected call)\n" + _table(["kind", "ours", "ours all·CUSUM", "study"], rows)
    )

    # operating point
    t_op = result.thresholds.get(("standard", *HEADLINE, "operating_point"))
    if t_op is not None:
        rows = []
        for kind in _kinds(result):
            c = result.cell(kind, *HEADLINE, mode="operating_point")
            rows.append([label(kind), rate_ci(c.rate, c.ci_low, c.ci_high) if c else "–"])
        k = round(t_op.fa_reached * n_test)
        source = "calibration" if result.split["calibration"][0] else "training"
        parts.append(
            f"Operating point (threshold = top 0.1 % of {source} call statistics), all cues + "
            f"CUSUM: threshold {num(t_op.value)}; on the test split it reaches "
            f"{pct(t_op.fa_reached, 1)} false alarms ({k}/{n_test} normal test streams; the "
            f"study's scan flagged {study.SCAN_FLAGGED_SESSIONS} of "
            f"{counted(int(study.CORPUS['sessions']), 'session')})\n"
            + _table(["kind", "detected (95% CI)"], rows)
        )

    # ablation
    if any(c.variant == "no_response_ids" for c in result.cells):
        parts.append(_ablation(result, breached))

    notes = _notes(result, breached)
    if notes:
        parts.append("Notes\n" + "\n".join(f"- {n}" for n in notes))
    parts.append(
        "Timings: "
        + ", ".join(f"{k} {v:.2f}s" for k, v in result.timings.items())
        + f" (total {sum(result.timings.values()):.2f}s)"
    )
    return "\n\n".join(parts) + "\n"


def _ablation(result: ExperimentResult, breached: Collection[tuple[str, str]]) -> str:
    # without response ids the time cue is *meant* to react to the same-response control, so
    # only the standard variant's choice leaves out the statistics whose controls breach
    time_det = best_detector_per_cue(result, "no_response_ids")["time"]
    std_time_det = best_detector_per_cue(result, exclude=breached)["time"]
    rows = []

    def fa(variant: str, cue: str, det: str, mode: str) -> str:
        t = result.thresholds.get((variant, cue, det, mode))
        return pct(t.fa_reached, 1) if t else "–"

    rows.append(
        [
            "false alarms at the operating point, time·point",
            fa("standard", "time", "point", "operating_point"),
            fa("no_response_ids", "time", "point", "operating_point"),
        ]
    )
    rows.append(
        [
            "false alarms at the operating point, all·CUSUM",
            fa("standard", "all", "cusum", "operating_point"),
            fa("no_response_ids", "all", "cusum", "operating_point"),
        ]
    )
    for kind in ("burst", "control_same_response_burst", "runaway_retry"):
        if kind not in result.config.kinds:
            continue
        # time·point's own row, unless the best time detectors already are point
        shown_rows = dict.fromkeys(
            (
                ("time", std_time_det, time_det),
                ("time", "point", "point"),
                ("all", "cusum", "cusum"),
            )
        )
        for cue, det_std, det_abl in shown_rows:
            a = result.cell(kind, cue, det_std)
            b = result.cell(kind, cue, det_abl, variant="no_response_ids")
            shown = det_std if det_std == det_abl else f"{det_std} / {det_abl}"
            rows.append(
                [
                    f"{label(kind)}, {cue}·{shown}",
                    pct(a.rate) if a else "–",
                    pct(b.rate) if b else "–",
                ]
            )
    return (
        "Ablation — response ids dropped (train, calibration and test): every gap counts as a "
        "gap between different responses, so parallel calls look like a machine-speed burst\n"
        + _table(["", "with response ids", "without"], rows)
        + f"\n(detection {fa_header(result)} unless stated)"
    )


def _artefact_notes(result: ExperimentResult) -> list[str]:
    """How flagged client artefacts were treated (kept out of the normal streams) and scored."""
    out = []
    for quirk, groups in result.split.get("artefacts", {}).items():
        where = ", ".join(
            f"{v[0]:,} in {k} ({counted(v[1], 'call')})"
            for k, v in groups.items()
            if k != "scored" and v[0]
        )
        scored = groups.get("scored", {})
        text = (
            f"client artefact {quirk}: {where} — real client behaviour, not injected and not "
            "the user's: kept out of training, calibration and the normal test streams "
            "(--include-client-artefacts keeps them)"
        )
        if scored.get("long"):
            text += (
                f"; of the {scored['long']} with ≥ {counted(result.config.min_calls, 'call')}, "
                f"{counted(scored['alarming_fa_target'], 'alarm')} at the all·CUSUM threshold "
                "above and "
                f"{scored['alarming_operating_point']} at the operating point (largest "
                f"all·CUSUM {scored['largest_all_cusum']:.1f})"
            )
        out.append(text)
    return out


def _notes(result: ExperimentResult, breached: Mapping[tuple[str, str], CellResult]) -> list[str]:
    out = _artefact_notes(result)
    if controls := control_note(breached):
        out.append(controls)
    runs = result.split["test"][0] * len(result.config.seeds)
    for kind in _kinds(result):
        notes = result.notes.get(kind, {})
        pair = notes.get(NOTE_READ_PAIR, 0)
        if pair:
            out.append(
                f"{label(kind)}: no Read before any allowed insertion point in {pair} of "
                f"{counted(runs, 'run')}; a Read + network call pair was inserted there instead"
            )
        mid = notes.get(NOTE_MID_RESPONSE, 0)
        if mid:
            out.append(
                f"{label(kind)}: {mid} of {counted(runs, 'run')} inserted inside a model response "
                "(no response boundary was usable)"
            )
        cut = notes.get(NOTE_PAYLOAD_CUT, 0)
        if cut:
            out.append(
                f"{label(kind)}: in {cut} of {counted(runs, 'run')} no earlier local result held "
                "the full "
                "payload; the largest one (at least 96 B) was sent instead"
            )
        for key, v in notes.items():
            if key.startswith("skipped: "):
                out.append(f"{label(kind)}: {v} of {counted(runs, 'run')} skipped — {key[9:]}")
    return out


def summary(result: ExperimentResult) -> dict[str, Any]:
    """JSON-ready results: everything in :meth:`ExperimentResult.to_dict` plus the headline
    rows beside the published figures."""
    headline = []
    breached = control_breaches(result)
    for kind in _kinds(result):
        c = result.cell(kind, *HEADLINE)
        up = result.cell(kind, *HEADLINE, mode="fa_next")
        k_n = alarming(result, *HEADLINE)
        k_n_up = alarming(result, *HEADLINE, mode="fa_next")
        best = best_single_cue(result, kind, exclude=breached)
        loud = louder_single_cue(result, kind, best)
        pub = study.DETECTION_ALL_CUSUM.get(kind)
        headline.append(
            {
                "kind": kind,
                "rate": None if c is None else _nan_none(c.rate),
                "ci": None if c is None else [_nan_none(c.ci_low), _nan_none(c.ci_high)],
                "fa_reached": None if c is None else c.fa_reached,
                # the level as k/n: normal test streams alarming / normal test streams
                "fa_alarming": None if k_n is None else k_n[0],
                "fa_streams": None if k_n is None else k_n[1],
                # a thin test split: detection at the next reachable level above the target
                "fa_next": None
                if up is None or k_n_up is None
                else {
                    "rate": _nan_none(up.rate),
                    "ci": [_nan_none(up.ci_low), _nan_none(up.ci_high)],
                    "fa_reached": up.fa_reached,
                    "fa_alarming": k_n_up[0],
                    "fa_streams": k_n_up[1],
                },
                "auc": None if c is None else _nan_none(c.auc),
                "median_latency": None if c is None else _nan_none(c.median_latency),
                "best_single_cue": None
                if best is None
                else {"cue": best[0], "detector": best[1], "rate": best[2]},
                # a better single cue whose controls breach (the report's †), if any
                "louder_single_cue_reacting_to_insertion": None
                if loud is None
                else {"cue": loud[0], "detector": loud[1], "rate": loud[2]},
                "study": {
                    "rate": pub[0] if pub else None,
                    "ci": [pub[1], pub[2]] if pub and pub[1] is not None else None,
                    "auc": study.AUC.get(kind),
                    "best_single_cue": study.DETECTION_SINGLE_CUE.get(kind),
                },
            }
        )
    return {
        **result.to_dict(),
        "headline": headline,
        "control_breaches": [
            {k: finite(v) for k, v in asdict(b).items()} for b in breached.values()
        ],
        "notes_text": _notes(result, breached),
        "warnings": [w for w in (thin_warning(result), thin_calibration_warning(result)) if w],
    }


def _nan_none(v: float) -> float | None:
    return None if math.isnan(v) else v
