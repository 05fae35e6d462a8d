"""Would a trained text classifier beat the scanner's rules? Leave one author out and see.

No maintained prompt-injection classifier runs offline here (their weights are on a hub this
machine cannot reach), so the nearest thing that can be built here is a bag-of-n-grams model
trained on the development sets: TF-IDF over word 1–2-grams and character 3–5-grams, logistic
regression (balanced classes). Each development author's set is held out in turn and the model
trained on the other two, so every figure is on an author the model never read — the situation
the blind set measures. Two thresholds: 0.5, and the one that lets 1 % of the held-out
author's own benign descriptions through (chosen on the test texts: favourable to the model).

The blind set is not read. Needs scikit-learn (in the ``dev`` extra, not a runtime dependency):
``.venv/bin/python benchmarks/scanner_classifier_baseline.py``. A comparison, not a target: it
prints figures and exits 0.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # bench_scanner: the labelled sets' reader

from bench_scanner import read_rows  # noqa: E402
from targets import command_line  # noqa: E402

AUTHORS = {
    "first (scanner_set)": HERE / "data" / "scanner_set.jsonl",
    "second (scanner_dev2)": HERE / "data" / "scanner_dev2.jsonl",
    "third (scanner_dev3)": HERE / "data" / "scanner_dev3.jsonl",
}


def main(argv: Sequence[str] | None = None) -> int:
    command_line(__doc__).parse_args(argv)
    try:
        from sklearn.feature_extraction.text import TfidfVectorizer
        from sklearn.linear_model import LogisticRegression
        from sklearn.pipeline import make_pipeline, make_union
    except ImportError:
        print(
            "scanner_classifier_baseline: needs scikit-learn (pip install -e '.[dev]')",
            file=sys.stderr,
        )
        return 1
    sets = {name: read_rows(path) for name, path in AUTHORS.items()}
    print("held-out author          threshold  recall  desc FPR  output FPR")
    for held, test in sets.items():
        train = [r for name, rows in sets.items() if name != held for r in rows]
        model = make_pipeline(
            make_union(
                TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True, min_df=2),
                TfidfVectorizer(
                    analyzer="char_wb", ngram_range=(3, 5), sublinear_tf=True, min_df=2
                ),
            ),
            LogisticRegression(C=10, max_iter=2000, class_weight="balanced"),
        )
        model.fit([r["text"] for r in train], [r["label"] == "injection" for r in train])
        p = model.predict_proba([r["text"] for r in test])[:, 1]
        injection = np.array([r["label"] == "injection" for r in test])
        kind = np.array([r["kind"] for r in test])
        benign_desc = p[~injection & (kind == "description")]
        benign_out = p[~injection & (kind == "output")]
        for threshold in (0.5, float(np.quantile(benign_desc, 0.99))):
            recall = np.mean(p[injection] > threshold)
            desc_fpr = np.mean(benign_desc > threshold)
            out_fpr = np.mean(benign_out > threshold)
            print(f"{held:<24} {threshold:9.3f}  {recall:6.3f}  {desc_fpr:8.3f}  {out_fpr:10.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
