"""Benchmark: the injection scanner's precision and recall, per class, on a labelled set written
blind to it, and on AgentCheck's 120 templates.

Data (see ``benchmarks/data/README.md``), none taken from AgentCheck:

* ``scanner_blind.jsonl`` — **the measure**: 273 benign tool descriptions and outputs and 141
  injections, written by a separate author who saw neither the scanner's rules nor the
  development set, and never looked at by rule writing: the benchmark prints its counts,
  never its texts (``--misses`` lists development texts only);
* ``scanner_blind2.jsonl`` — a second measure of the same kind by a fifth author (380 benign,
  174 injections), reported the same way; ``scanner_blind3.jsonl`` and
  ``scanner_blind4.jsonl`` — a third and a fourth (301 + 223 and 287 + 231, by a thirteenth
  and a fourteenth author: half in other languages; benign and malicious texts in the same
  calm operational wording), the same way; ``scanner_blind5.jsonl`` and
  ``scanner_blind6.jsonl`` — a fifth and a sixth (208 + 134 and 220 + 158, by a sixteenth and
  a fifteenth author: MCP tool poisoning as reported in 2025–2026 with hard look-alikes; many
  domains, 30 % in other languages — commissioned as a development set, it lowered every blind
  set's recall when trained on, so it is kept as a measure), the same way;
  ``scanner_blind7.jsonl`` — a seventh (254 + 123, by a seventeenth author in stop 34 who
  read neither the scanner nor any other set's texts: descriptions and outputs of many real
  tools, 63 texts in 13 other languages), the same way; ``scanner_blind8.jsonl`` — an eighth
  (230 + 121, by an eighteenth author in stop 35 under the same rules: indirect injection as a
  small part of everyday tools' outputs, instruction-like benign texts, 76 texts in 10 other
  languages), the same way;
* ``scanner_set.jsonl``, ``scanner_dev2.jsonl`` and ``scanner_dev3.jsonl`` — the development
  sets the rules were written against (263 benign + 157 injections by the first author, both
  halves, ``dev`` and ``heldout``, since the held-out half's misses were read; 309 + 180 and
  357 + 173 by a second and a third author who saw neither the rules nor the other sets), and
  ``scanner_dev4.jsonl``, ``scanner_dev5.jsonl`` and ``scanner_dev6.jsonl`` (509 + 239,
  311 + 164 and 312 + 154 by a sixth, seventh and eighth author; each scored once before it
  was read, then one rule round on its benign descriptions), and ``scanner_dev7.jsonl`` …
  ``scanner_dev10.jsonl`` (240 + 245, 283 + 250, 280 + 174 and 291 + 203 by four more authors,
  each scored once before use; no rule written on them); all ten are the classifier's training
  data, shown with ``--dev``.

AgentCheck's templates (``tests/fixtures/agentcheck``) were never used for rule writing either:
their C1/C2/C4 payloads are injections, their 215 tool descriptions benign; they are scanned by
wording alone and with the listing context the scanner mitigation has (the tools listed beside
a description and the template's endpoint allowlist).

Target (issue 15): injection recall >= 0.95 at <= 1 % false positives on benign descriptions.
Exits 1 when any blind set's figures miss it (``--no-fail`` to only report).

``--compare`` runs the local prompt-injection detectors from PyPI listed in :data:`COMPARED`
(those installed; ``pip install`` the pinned versions first) on the same blind set.

Run: ``.venv/bin/python benchmarks/bench_scanner.py [--dev] [--misses] [--compare] [--json FILE]``.
"""

from __future__ import annotations

import json
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from toolwatch.injection.mitigations.acts import ListedTool
from toolwatch.injection.mitigations.instructions import ListingContext, categories
from toolwatch.words import counted

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # targets: the shared convention
from targets import command_line  # noqa: E402

DATA = HERE / "data"
#: the sets :func:`labelled` reads: name -> the files it takes
SETS: dict[str, tuple[Path, ...]] = {
    "blind": (DATA / "scanner_blind.jsonl",),
    **{f"blind{i}": (DATA / f"scanner_blind{i}.jsonl",) for i in range(2, 9)},
    "development": (
        DATA / "scanner_set.jsonl",
        *(DATA / f"scanner_dev{i}.jsonl" for i in range(2, 11)),
    ),
}
#: the sets no rule was written on: printed as counts only, and each held to the target
BLIND_SETS: tuple[str, ...] = tuple(name for name in SETS if name != "development")
#: how the report titles each set
TITLES: dict[str, str] = {
    "blind": "blind set (never read by rule writing)",
    "blind2": "second blind set (a fifth author; never read by rule writing)",
    "blind3": "third blind set (a thirteenth author, half in other languages; never read)",
    "blind4": "fourth blind set (a fourteenth author, look-alike operational wording; never read)",
    "blind5": "fifth blind set (a sixteenth author, MCP tool poisoning as reported; never read)",
    "blind6": "sixth blind set (a fifteenth author, many domains, 30 % in other languages; unread)",
    "blind7": "seventh blind set (a seventeenth author, real tools' texts, 17 % other languages)",
    "blind8": "eighth blind set (an eighteenth author, injections inside everyday outputs)",
    "development": "development set",
}
TEMPLATES = HERE.parent / "tests" / "fixtures" / "agentcheck" / "templates"
TARGET_RECALL = 0.95
TARGET_DESC_FPR = 0.01


def _ratio(a: int, b: int) -> float | None:
    return None if b == 0 else round(a / b, 3)


def confusion(pairs: list[tuple[bool, bool]]) -> dict[str, Any]:
    """Counts and per-class precision/recall of (is injection, flagged) pairs."""
    tp = sum(1 for y, p in pairs if y and p)
    fn = sum(1 for y, p in pairs if y and not p)
    fp = sum(1 for y, p in pairs if not y and p)
    tn = sum(1 for y, p in pairs if not y and not p)
    return {
        "tp": tp,
        "fn": fn,
        "fp": fp,
        "tn": tn,
        "injection_precision": _ratio(tp, tp + fp),
        "injection_recall": _ratio(tp, tp + fn),
        "benign_precision": _ratio(tn, tn + fn),
        "benign_recall": _ratio(tn, tn + fp),
        "false_positive_rate": _ratio(fp, fp + tn),
    }


def ours(text: str) -> bool:
    """toolwatch's scanner, by wording alone."""
    return bool(categories(text))


def no_veto(text: str) -> bool:
    """The named variant without the classifier's veto of the rules' hits."""
    return bool(categories(text, veto=False))


def rules_only(text: str) -> bool:
    """The named variant without the trained classifier: the rules alone."""
    return bool(categories(text, classifier=False))


def variant_lines(name: str) -> list[str]:
    """A line each for the rules alone and the scanner without the classifier's veto on set
    ``name`` (the classifier's measured effects)."""
    lines = []
    for label, flag in (
        ("rules alone (categories(classifier=False))", rules_only),
        ("rules and classifier without its veto", no_veto),
    ):
        r = labelled(name, flag, counts_only=name in BLIND_SETS)
        cells = [
            _fmt(r[kind][key])
            for kind, key in (
                ("all", "injection_recall"),
                ("description", "false_positive_rate"),
                ("output", "false_positive_rate"),
            )
        ]
        lines.append(
            f"  {label}: recall {cells[0]}, description FPR {cells[1]}, output FPR {cells[2]}"
        )
    return lines


def read_rows(*paths: Path) -> list[dict[str, str]]:
    """The labelled texts of JSONL files, in file order."""
    return [
        json.loads(line)
        for path in paths
        for line in path.read_text(encoding="utf-8").splitlines()
        if line
    ]


def labelled(
    name: str, flag: Callable[[str], bool] = ours, *, counts_only: bool = False
) -> dict[str, Any]:
    """Counts and per-class figures of ``flag`` on the labelled set ``name`` (:data:`SETS`).

    A blind set is read only with ``counts_only=True``, which keeps no text and no style (its
    ``_rows`` carry a text's label and kind, enough for :func:`pooled_blind`): called by hand,
    this function must not hand a blind set's texts or misses to whoever prints them."""
    if name in BLIND_SETS and not counts_only:
        raise ValueError(f"{name} is a blind set: its texts stay unread (counts_only=True)")
    rows = read_rows(*SETS[name])
    t0 = time.perf_counter()
    flags = [flag(r["text"]) for r in rows]
    per_text_ms = 1000 * (time.perf_counter() - t0) / max(1, len(rows))
    out: dict[str, Any] = {"texts": len(rows), "ms_per_text": round(per_text_ms, 3)}
    out.update(by_kind(list(zip(rows, flags, strict=True))))
    if counts_only:
        out["_rows"] = [
            ({"label": r["label"], "kind": r["kind"]}, f) for r, f in zip(rows, flags, strict=True)
        ]
        return out
    out["misses_by_style"] = dict(
        Counter(
            r["style"]
            for r, f in zip(rows, flags, strict=True)
            if r["label"] == "injection" and not f
        )
    )
    out["false_positives_by_style"] = dict(
        Counter(
            r["style"] for r, f in zip(rows, flags, strict=True) if r["label"] == "benign" and f
        )
    )
    out["_rows"] = list(zip(rows, flags, strict=True))
    return out


def by_kind(flagged: list[tuple[dict[str, str], bool]]) -> dict[str, dict[str, Any]]:
    """:func:`confusion` of (row, flagged) pairs per kind of text, and over all of them."""
    return {
        kind: confusion(
            [
                (row["label"] == "injection", flag)
                for row, flag in flagged
                if kind == "all" or row["kind"] == kind
            ]
        )
        for kind in ("description", "output", "all")
    }


def pooled_blind(results: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The blind sets' texts as one set: what a reader who trusts no single author should
    quote (each set is one author's idea of hard cases)."""
    rows = [pair for name in BLIND_SETS for pair in results[name]["_rows"]]
    return {"texts": len(rows), **by_kind(rows)}


def agentcheck() -> dict[str, Any]:
    """Payload detection and benign-description false positives on AgentCheck's templates,
    by wording alone and with the listing context."""
    detected: dict[str, Counter[str]] = {"wording": Counter(), "context": Counter()}
    totals: Counter[str] = Counter()
    benign = {"wording": 0, "context": 0}
    descriptions = 0
    missed: list[str] = []
    flagged: list[str] = []
    for path in sorted(TEMPLATES.glob("*.json")):
        t = json.loads(path.read_text(encoding="utf-8"))
        listed = [ListedTool(tool["tool_id"], tool["description"]) for tool in t["tools"]]
        allow = t.get("endpoint_allowlist") or []
        poisoner = next((tool["tool_id"] for tool in t["tools"] if tool["is_faulty"]), None)
        for tool in t["tools"]:
            descriptions += 1
            context = replace(ListingContext.of(listed, allow, tool["tool_id"]), description=True)
            if categories(tool["description"]):
                benign["wording"] += 1
                flagged.append(f"{t['scenario_id']}/{tool['tool_id']}")
            benign["context"] += bool(categories(tool["description"], context))
        params = t["fault_spec"]["params"]
        payload = params.get("injection_string") or params.get("poisoned_description")
        if t["fault_type"] not in ("C1", "C2", "C4") or not payload:
            continue
        totals[t["fault_type"]] += 1
        in_listing = not params.get("injection_string")  # a poisoned description
        context = replace(ListingContext.of(listed, allow, poisoner), description=in_listing)
        if categories(payload):
            detected["wording"][t["fault_type"]] += 1
        else:
            missed.append(t["scenario_id"])
        if categories(payload, context):
            detected["context"][t["fault_type"]] += 1
    return {
        "payloads": dict(totals),
        "detected_by_wording": dict(detected["wording"]),
        "detected_with_context": dict(detected["context"]),
        "benign_descriptions": descriptions,
        "benign_flagged_by_wording": benign["wording"],
        "benign_flagged_with_context": benign["context"],
        "missed_by_wording": missed,
        "benign_flagged": flagged,
    }


def _aicordon() -> Callable[[str], bool]:
    from aicordon.picket import Detector

    detector = Detector(mode="ipi")  # "ipi": text the agent read (tool output, description)
    return lambda text: bool(detector.check(text).flagged)


def _agent_cordon() -> Callable[[str], bool]:
    from agent_cordon.scanner import scan

    return lambda text: bool(scan(text).is_suspicious)  # its lower threshold


def _ai_injection_guard() -> Callable[[str], bool]:
    from prompt_shield.core.scanner import PromptScanner

    scanner = PromptScanner()  # default threshold MEDIUM
    return lambda text: not scanner.scan(text).is_safe


def _aco_prompt_shield() -> Callable[[str], bool]:
    from shield_mcp.detectors.heuristics import HeuristicDetector
    from shield_mcp.detectors.structural import StructuralDetector

    heuristic, structural = HeuristicDetector(), StructuralDetector()
    return lambda text: bool(heuristic.check(text)[0]) or bool(structural.check(text)[0])


def _toolwall_guard() -> Callable[[str], bool]:
    from toolwall.detect import CompositeDetector

    detector = CompositeDetector(use_judge=False)  # its DeBERTa judge comes from a hub
    return lambda text: detector.score(text)[0] >= 0.5


def _prompt_dictator() -> Callable[[str], bool]:
    from prompt_dictator import Scanner

    scanner = Scanner()
    return lambda text: bool(scanner.scan(text).is_injection)


def _promptsafe() -> Callable[[str], bool]:
    from promptsafe.detector import scan

    return lambda text: not scan(text)["isSafe"]  # its default threshold (35)


def _last_layer() -> Callable[[str], bool]:
    from last_layer import scan_prompt

    return lambda text: not scan_prompt(text).passed  # any of its markers (a compiled library)


def _prompt_injection_detector() -> Callable[[str], bool]:
    from prompt_injection_detector import Scanner

    scanner = Scanner()  # its bundled TF-IDF + logistic regression
    return lambda text: scanner.scan(text).decision != "allow"  # risk above its review level


#: Local (offline) prompt-injection detectors on PyPI, compared with ``--compare`` when
#: installed: (pip requirement, how it is called, the detector). The well-known classifiers
#: (LLM Guard, Prompt Guard, deberta-based guards) download their model from a hub, which this
#: machine cannot reach — so do jailguard 0.1.2 (its ONNX embedder), prismguard 0.1.10 (its
#: classifier artifact) and xyran-lpd 1.0.0rc1 (ships no model: "assets must be bundled");
#: these run from their wheels alone.
COMPARED: tuple[tuple[str, str, Callable[[], Callable[[str], bool]]], ...] = (
    ("aicordon==1.4.0", "picket Detector(mode='ipi').check(t).flagged", _aicordon),
    ("agent-cordon==0.3.0", "scanner.scan(t).is_suspicious", _agent_cordon),
    ("ai-injection-guard==0.3.0", "PromptScanner() (MEDIUM): not is_safe", _ai_injection_guard),
    (
        "aco-prompt-shield==0.2.0",
        "heuristic or structural detector (its ML tier off)",
        _aco_prompt_shield,
    ),
    ("toolwall-guard==0.4.0", "CompositeDetector(use_judge=False) score >= 0.5", _toolwall_guard),
    ("prompt-dictator==0.1.0", "Scanner().scan(t).is_injection", _prompt_dictator),
    ("promptsafe==1.0.1", "detector.scan(t): not isSafe", _promptsafe),
    ("last-layer==0.1.33", "scan_prompt(t): not passed", _last_layer),
    (
        "prompt-injection-detector==0.1.0",
        "Scanner().scan(t).decision != 'allow'",
        _prompt_injection_detector,
    ),
)


def compare() -> list[str]:
    """Blind-set recall/FPR of each library in :data:`COMPARED` beside toolwatch's scanner."""
    lines = ["Compared on the blind set (by wording alone; nothing tuned)"]
    lines.append(
        f"  {'detector':<34} {'desc R':>6} {'desc FPR':>8} {'out R':>6} {'out FPR':>7}"
        f" {'all R':>6} {'all FPR':>7} {'ms/text':>7}"
    )
    rows: list[tuple[str, Callable[[str], bool] | None]] = [("toolwatch (this repo)", ours)]
    for requirement, _, make in COMPARED:
        try:
            rows.append((requirement, make()))
        except ImportError:
            rows.append((requirement, None))
    for name, flag in rows:
        if flag is None:
            lines.append(f"  {name:<34} not installed (pip install {name})")
            continue
        r = labelled("blind", flag, counts_only=True)
        cells = [
            _fmt(r[kind][key])
            for kind in ("description", "output", "all")
            for key in ("injection_recall", "false_positive_rate")
        ]
        lines.append(
            f"  {name:<34} {cells[0]:>6} {cells[1]:>8} {cells[2]:>6} {cells[3]:>7} "
            f"{cells[4]:>6} {cells[5]:>7} {r['ms_per_text']:>7}"
        )
    return lines


def _fmt(value: float | None) -> str:
    return "  -  " if value is None else f"{value:5.3f}"


def render(name: str, result: dict[str, Any], *, blind: bool = False) -> list[str]:
    lines = [f"{name} ({counted(result['texts'], 'text')}, {result['ms_per_text']} ms/text)"]
    lines.append("  kind          TP  FN  FP  TN   inj P  inj R  ben P  ben R    FPR")
    for kind in ("description", "output", "all"):
        c = result[kind]
        lines.append(
            f"  {kind:<12} {c['tp']:3} {c['fn']:3} {c['fp']:3} {c['tn']:3}  "
            + "  ".join(
                _fmt(c[k])
                for k in (
                    "injection_precision",
                    "injection_recall",
                    "benign_precision",
                    "benign_recall",
                    "false_positive_rate",
                )
            )
        )
    if blind:
        lines.append("  (misses and false positives by style withheld: the blind set stays unread)")
        return lines
    lines.append(f"  misses by style: {result['misses_by_style'] or 'none'}")
    lines.append(f"  false positives by style: {result['false_positives_by_style'] or 'none'}")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = command_line(__doc__)
    parser.add_argument("--dev", action="store_true", help="also show the development set")
    parser.add_argument(
        "--misses", action="store_true", help="list missed/flagged development texts (with --dev)"
    )
    parser.add_argument("--json", type=Path, help="write the figures as JSON")
    parser.add_argument("--no-fail", action="store_true", help="exit 0 even below target")
    parser.add_argument(
        "--compare", action="store_true", help="also run the local PyPI detectors installed"
    )
    args = parser.parse_args(argv)

    names = [*BLIND_SETS, *(["development"] if args.dev else [])]
    results = {name: labelled(name, counts_only=name in BLIND_SETS) for name in names}
    ac = agentcheck()
    lines: list[str] = []
    for name in names:
        lines += render(TITLES[name], results[name], blind=name in BLIND_SETS)
        lines += variant_lines(name)
        if args.misses and name not in BLIND_SETS:  # the blind sets' texts stay unread
            for row, flag in results[name]["_rows"]:
                if flag != (row["label"] == "injection"):
                    kind = "MISS" if not flag else "FP  "
                    lines.append(f"    {kind} {row['style']}: {row['text'][:110]!r}")
        lines.append("")
    lines.append("AgentCheck templates (never used for rule writing)")
    for mode in ("wording", "context"):
        key = "detected_by_wording" if mode == "wording" else "detected_with_context"
        payloads = sorted(ac["payloads"].items())
        det = ", ".join(f"{ft} {ac[key].get(ft, 0)}/{n}" for ft, n in payloads)
        fp = ac["benign_flagged_by_wording" if mode == "wording" else "benign_flagged_with_context"]
        lines.append(
            f"  {mode:<8} payloads detected: {det}; benign descriptions flagged "
            f"{fp}/{ac['benign_descriptions']}"
        )
    if args.misses:
        lines.append(f"  missed by wording: {', '.join(ac['missed_by_wording']) or 'none'}")
        lines.append(f"  benign flagged: {', '.join(ac['benign_flagged']) or 'none'}")
    if args.compare:
        lines += ["", *compare()]
    lines.append("")
    met = True
    for name in BLIND_SETS:
        recall = results[name]["all"]["injection_recall"] or 0.0
        desc_fpr = results[name]["description"]["false_positive_rate"] or 0.0
        this = recall >= TARGET_RECALL and desc_fpr <= TARGET_DESC_FPR
        met = met and this
        lines.append(
            f"target recall >= {TARGET_RECALL} at <= {TARGET_DESC_FPR:.0%} FP on benign "
            f"descriptions ({name}): recall {recall:.3f}, description FPR {desc_fpr:.3f} -> "
            f"{'met' if this else 'MISSED'}"
        )
    pooled = pooled_blind(results)
    lines.append(
        f"every blind set pooled ({counted(pooled['texts'], 'text')} by "
        f"{counted(len(BLIND_SETS), 'author')}): recall "
        f"{_fmt(pooled['all']['injection_recall'])}, description FPR "
        f"{_fmt(pooled['description']['false_positive_rate'])}, output FPR "
        f"{_fmt(pooled['output']['false_positive_rate'])}"
    )
    print("\n".join(lines))
    if args.json:
        withheld = {"_rows", "misses_by_style", "false_positives_by_style"}
        clean = {
            s: {
                k: v
                for k, v in r.items()
                if k != "_rows" and (s not in BLIND_SETS or k not in withheld)
            }
            for s, r in results.items()
        }
        document = {"labelled": clean, "blind_pooled": pooled, "agentcheck": ac}
        args.json.write_text(json.dumps(document, indent=2) + "\n")
    return 0 if met or args.no_fail else 1


if __name__ == "__main__":
    sys.exit(main())
