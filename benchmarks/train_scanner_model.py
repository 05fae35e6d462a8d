"""Train the scanner's text classifier (``injection/mitigations/classifier.py``) on the development
sets and write the model toolwatch ships; ``--check`` retrains and fails if the shipped file
differs.

Data: the development sets of ``benchmarks/data`` (``bench_scanner.SETS["development"]``:
``scanner_set`` and ``scanner_dev2`` … ``scanner_dev10``, one author each). The blind sets are
not read.

1. **Threshold and veto**, set before any measure: each author's set is scored by a model
   trained on the others; the threshold is the probability above which 1 % of those held-out
   benign descriptions fall (pooled over the authors) — the false-positive level the issue
   allows, on authors the model did not read — and the veto the probability below which 1 %
   of the held-out injections the rules catch fall (what overruling a rule may cost).
2. **Model**: the same features and regression fitted on all the sets.

Logistic regression (scikit-learn, lbfgs, balanced classes, C = 4) over the classifier's own
hashed TF-IDF features, so training and scoring share one feature code. Coefficients and idf
are rounded to 6 significant digits; the file is gzip without a timestamp, so a re-run writes
the same bytes.

Needs scikit-learn (in the ``dev`` extra). Run:
``.venv/bin/python benchmarks/train_scanner_model.py [--check] [--out FILE]``.
"""

from __future__ import annotations

import functools
import math
import sys
from collections import Counter
from dataclasses import replace
from importlib import resources
from pathlib import Path
from typing import Any

from toolwatch.injection.mitigations import classifier as C
from toolwatch.words import counted

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # bench_scanner: the labelled sets and their reader

from bench_scanner import SETS, read_rows  # noqa: E402
from targets import command_line  # noqa: E402

from toolwatch.injection.mitigations.instructions import categories  # noqa: E402

#: one author per development set file
AUTHORS = {path.stem: path for path in SETS["development"]}
#: Benign descriptions of held-out authors allowed above the threshold.
TARGET_DESC_FPR = 0.01
#: Injections the rules catch in held-out authors' sets allowed below the veto.
TARGET_VETO_LOSS = 0.01
#: Logistic regression's inverse regularisation (the value of the first scikit-learn model
#: scored beside the rules; ``scanner_classifier_baseline.py`` uses 10).
REGULARISATION_C = 4.0
#: Texts a bucket must occur in to be kept.
MIN_DF = 2
#: ``--check``: the largest difference of a number allowed between retrained and shipped.
TOLERANCE = 1e-3


def _round(x: float) -> float:
    return float(f"{x:.6g}")


def _idf(counted: list[tuple[Counter[int], Counter[int]]]) -> tuple[dict[int, float], ...]:
    n = len(counted)
    out = []
    for kind in range(len(C.KINDS)):
        df: Counter[int] = Counter()
        for counts in counted:
            df.update(counts[kind].keys())
        out.append(
            {b: _round(math.log((1 + n) / (1 + d)) + 1.0) for b, d in df.items() if d >= MIN_DF}
        )
    return tuple(out)


def _matrix(
    counted: list[tuple[Counter[int], Counter[int]]], idf: tuple[dict[int, float], ...]
) -> Any:
    import scipy.sparse as sp

    rows, cols, vals = [], [], []
    for i, counts in enumerate(counted):
        for kind, (kind_counts, kind_idf) in enumerate(zip(counts, idf, strict=True)):
            for b, v in C.tfidf(kind_counts, kind_idf).items():
                rows.append(i)
                cols.append(kind * C.BUCKETS + b)
                vals.append(v)
    return sp.csr_matrix((vals, (rows, cols)), shape=(len(counted), len(C.KINDS) * C.BUCKETS))


#: a text's hashed n-gram counts, computed once: the held-out cuts fit the model once per set,
#: each time on all the other sets' texts (read only, never changed)
_bucket_counts = functools.cache(C.bucket_counts)


def fit(rows: list[dict[str, str]], threshold: float, trained_on: dict[str, Any]) -> C.TextModel:
    """The classifier fitted on ``rows``."""
    from sklearn.linear_model import LogisticRegression

    counted = [_bucket_counts(r["text"]) for r in rows]
    idf = _idf(counted)
    labels = [r["label"] == "injection" for r in rows]
    lr = LogisticRegression(max_iter=5000, class_weight="balanced", C=REGULARISATION_C)
    lr.fit(_matrix(counted, idf), labels)
    weights = lr.coef_[0]
    coef = tuple(
        {b: _round(float(weights[k * C.BUCKETS + b])) for b in idf[k]} for k in range(len(idf))
    )
    return C.TextModel(
        idf=(idf[0], idf[1]),
        coef=(coef[0], coef[1]),
        intercept=_round(float(lr.intercept_[0])),
        threshold=threshold,
        trained_on=trained_on,
    )


def _figures(flagged: list[tuple[dict[str, str], bool]], prefix: str) -> dict[str, float]:
    injections = [f for r, f in flagged if r["label"] == "injection"]
    desc = [f for r, f in flagged if r["label"] == "benign" and r["kind"] == "description"]
    outputs = [f for r, f in flagged if r["label"] == "benign" and r["kind"] == "output"]
    return {
        f"{prefix}recall": round(sum(injections) / len(injections), 3),
        f"{prefix}description_fpr": round(sum(desc) / len(desc), 3),
        f"{prefix}output_fpr": round(sum(outputs) / len(outputs), 3),
    }


def held_out_cuts(sets: dict[str, list[dict[str, str]]]) -> tuple[float, float, dict[str, Any]]:
    """The threshold (the probability above which :data:`TARGET_DESC_FPR` of held-out benign
    descriptions fall), the veto (the probability below which :data:`TARGET_VETO_LOSS` of the
    held-out injections the rules catch fall) and the held-out figures at them: the model's
    alone, and the scanner's (rules, vetoed, or the model)."""
    # (row, probability, a rule fires, the model judges the text)
    scored: list[tuple[dict[str, str], float, bool, bool]] = []
    for held, test in sets.items():
        train = [r for name, rows in sets.items() if name != held for r in rows]
        model = fit(train, 0.5, {})
        scored += [
            (
                r,
                model.probability(r["text"]),
                bool(categories(r["text"], classifier=False)),
                C.judges(r["text"]),
            )
            for r in test
        ]
    benign = sorted(
        p for r, p, _, _ in scored if r["label"] == "benign" and r["kind"] == "description"
    )
    threshold = _round(benign[len(benign) - 1 - math.floor(TARGET_DESC_FPR * len(benign))])
    caught = sorted(
        p for r, p, rule, judged in scored if rule and judged and r["label"] == "injection"
    )
    veto = _round(caught[math.floor(TARGET_VETO_LOSS * len(caught))])
    # as ``instructions.categories`` decides: a rule's hit unless vetoed, else the model's flag
    model_alone = [(r, judged and p > threshold) for r, p, _, judged in scored]
    scanner = [
        (r, not (judged and p < veto) if rule else judged and p > threshold)
        for r, p, rule, judged in scored
    ]
    return (
        threshold,
        veto,
        {**_figures(model_alone, "held_out_"), **_figures(scanner, "held_out_scanner_")},
    )


def train() -> C.TextModel:
    sets = {name: read_rows(path) for name, path in AUTHORS.items()}
    threshold, veto, figures = held_out_cuts(sets)
    everything = [r for rows in sets.values() for r in rows]
    trained_on = {
        "sets": {name: len(rows) for name, rows in sets.items()},
        "injections": sum(r["label"] == "injection" for r in everything),
        "benign": sum(r["label"] == "benign" for r in everything),
        "regularisation_c": REGULARISATION_C,
        "min_df": MIN_DF,
        "target_description_fpr": TARGET_DESC_FPR,
        "target_veto_loss": TARGET_VETO_LOSS,
        **figures,
    }
    return replace(fit(everything, threshold, trained_on), veto=veto)


def _difference(a: C.TextModel, b: C.TextModel) -> float:
    """The largest absolute difference between two models' numbers (inf when their buckets
    differ): another machine's BLAS may round the last digits differently."""
    if [set(x) for x in a.idf] != [set(x) for x in b.idf]:
        return math.inf
    diffs = [abs(a.intercept - b.intercept), abs(a.threshold - b.threshold), abs(a.veto - b.veto)]
    for mine, theirs in (*zip(a.idf, b.idf, strict=True), *zip(a.coef, b.coef, strict=True)):
        diffs += [abs(mine[k] - theirs[k]) for k in mine]
    return max(diffs)


def main(argv: list[str] | None = None) -> int:
    parser = command_line(__doc__)
    parser.add_argument("--check", action="store_true", help="fail if the shipped file differs")
    parser.add_argument("--out", type=Path, help="write the model here (default: the shipped file)")
    args = parser.parse_args(argv)
    try:
        import sklearn  # noqa: F401
    except ImportError:
        print("train_scanner_model: needs scikit-learn (pip install -e '.[dev]')")
        return 2
    if args.out:  # before a minute of training, not after
        try:
            args.out.parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            print(f"train_scanner_model: cannot write {args.out}: {e.strerror}")
            return 2
    model = train()
    data = model.dump()
    shipped = Path(str(resources.files(C.__package__).joinpath(C.MODEL_RESOURCE)))
    t = model.trained_on
    print(
        f"trained on {counted(t['injections'], 'injection')} and "
        f"{counted(t['benign'], 'benign text')}; threshold "
        f"{model.threshold} (held out: recall {t['held_out_recall']}, description FPR "
        f"{t['held_out_description_fpr']}, output FPR {t['held_out_output_fpr']}); veto "
        f"{model.veto} (held out, rules vetoed or the model: recall "
        f"{t['held_out_scanner_recall']}, description FPR "
        f"{t['held_out_scanner_description_fpr']}, output FPR "
        f"{t['held_out_scanner_output_fpr']}); "
        f"{len(model.idf[0])} word and {counted(len(model.idf[1]), 'character bucket')}"
    )
    if args.check:
        difference = _difference(C.TextModel.load_bytes(shipped.read_bytes()), model)
        same = difference <= TOLERANCE
        print(
            f"shipped model {shipped}: {'the same' if same else 'DIFFERS'} (largest difference "
            f"of a weight, idf or the threshold: {difference:.2g}; tolerance {TOLERANCE})"
        )
        return 0 if same else 1
    out = args.out or shipped
    out.write_bytes(data)
    print(f"wrote {out} ({counted(len(data), 'byte')})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
