"""A trained text classifier beside the scanner's rules: it flags tool text addressed to the agent
in wordings the rules were never written for.

Rules catch what their authors thought of; on texts by an author they never saw they miss a
fifth to a third of the injections (``benchmarks/bench_scanner.py``), and each further round of
rules wins less. A bag-of-n-grams model trained on the same development sets misses *other*
ones, so the scanner flags a text when either does. The model is logistic regression over
TF-IDF features of word 1–2-grams and character 3–5-grams (within words, padded by a space),
each n-gram hashed (CRC-32) into one of ``2**18`` buckets per kind, sublinear term frequency,
smoothed idf, each kind L2-normalised: what ``benchmarks/scanner_classifier_baseline.py``
measured, made small enough to ship (no vocabulary, only the buckets seen in two or more
training texts) and to run with the standard library alone.

It also overrules the rules where it is sure: a text whose wording made a rule fire is let
through when its probability is below the model's ``veto`` — the rules' false positives on
new authors' hard benign descriptions ("Always answer in the user's language") are wordings
the model has seen benign, while the injections the rules catch are rarely that far from the
attacks it learnt. Cues from the listing context (a tool that shadows another, a host outside
the allowlist) are not wording and are never overruled.

Neither number is tuned on any measure: the threshold is the probability above which 1 % of
the development sets' benign descriptions fall, and the veto the probability below which 1 %
of the injections the rules catch fall, when each author's set is scored by a model trained
on the others (``benchmarks/train_scanner_model.py`` fits both and writes
``data/scanner_model.json.gz``; ``--check`` proves the shipped file is what it makes). Texts
of fewer than :data:`MIN_WORDS` words are never flagged by the model: it learnt from whole
descriptions and outputs, not from a JSON field's fragment.

The text is scored in memory and dropped; nothing of it, nor of its n-grams, is kept.
"""

from __future__ import annotations

import gzip
import itertools
import json
import math
import re
import zlib
from collections import Counter
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any, Final

#: Hash buckets per n-gram kind (word, character).
BUCKETS: Final = 1 << 18
#: Texts shorter than this (in words of two or more letters) are not scored.
MIN_WORDS: Final = 4
#: The shipped model, beside this module.
MODEL_RESOURCE: Final = "data/scanner_model.json.gz"
#: Format of the model file.
MODEL_FORMAT: Final = "toolwatch-scanner-model/1"
_WORD: Final = re.compile(r"(?u)\b\w\w+\b")
#: The two n-gram kinds, in the order the model stores them.
KINDS: Final = ("word", "char")


def judges(text: str) -> bool:
    """Whether the model judges ``text`` at all: a text of fewer than :data:`MIN_WORDS` words is
    a fragment (a JSON field's piece), not what it learnt from."""
    return len(_WORD.findall(text)) >= MIN_WORDS


def ngrams(text: str) -> tuple[Counter[str], Counter[str]]:
    """Word 1–2-grams and in-word character 3–5-grams of ``text`` (lower-cased), counted."""
    low = text.lower()
    words = _WORD.findall(low)
    word: Counter[str] = Counter(words)
    word.update(f"{a} {b}" for a, b in itertools.pairwise(words))
    char: Counter[str] = Counter()
    for token in low.split():
        padded = f" {token} "
        for n in range(3, 6):
            if len(padded) < n:
                break
            char.update(padded[i : i + n] for i in range(len(padded) - n + 1))
    return word, char


def hashed(grams: Counter[str]) -> Counter[int]:
    """The n-gram counts folded into :data:`BUCKETS` buckets."""
    out: Counter[int] = Counter()
    for gram, count in grams.items():
        out[zlib.crc32(gram.encode("utf-8")) & (BUCKETS - 1)] += count
    return out


def bucket_counts(text: str) -> tuple[Counter[int], Counter[int]]:
    """Hashed word and character n-gram counts of ``text`` (what training and scoring read)."""
    word, char = ngrams(text)
    return hashed(word), hashed(char)


def tfidf(counts: Counter[int], idf: dict[int, float]) -> dict[int, float]:
    """Sublinear-tf × idf over the buckets the model knows, L2-normalised."""
    values = {b: (1.0 + math.log(k)) * idf[b] for b, k in counts.items() if b in idf}
    norm = math.sqrt(sum(v * v for v in values.values()))
    return {b: v / norm for b, v in values.items()} if norm else {}


@dataclass(frozen=True)
class TextModel:
    """Logistic regression over hashed TF-IDF n-grams (module docstring)."""

    idf: tuple[dict[int, float], dict[int, float]]
    coef: tuple[dict[int, float], dict[int, float]]
    intercept: float
    threshold: float
    trained_on: dict[str, Any]
    #: Below this probability a rule's wording hit is overruled (0: never).
    veto: float = 0.0

    def probability(self, text: str) -> float:
        """P(injection | text) under the model."""
        z = self.intercept
        for counts, idf, coef in zip(bucket_counts(text), self.idf, self.coef, strict=True):
            z += sum(coef.get(b, 0.0) * v for b, v in tfidf(counts, idf).items())
        return 1.0 / (1.0 + math.exp(-z)) if z > -700 else 0.0

    def flags(self, text: str) -> bool:
        """Whether the model calls ``text`` an injection (never for a fragment)."""
        return judges(text) and self.probability(text) > self.threshold

    def vetoes(self, text: str) -> bool:
        """Whether the model is sure enough that ``text`` is benign to overrule a rule that
        fired on its wording (never for a fragment)."""
        return self.veto > 0.0 and judges(text) and self.probability(text) < self.veto

    def to_json(self) -> dict[str, Any]:
        kinds = {}
        for kind, idf, coef in zip(KINDS, self.idf, self.coef, strict=True):
            buckets = sorted(idf)
            kinds[kind] = {
                "buckets": buckets,
                "idf": [idf[b] for b in buckets],
                "coef": [coef.get(b, 0.0) for b in buckets],
            }
        return {
            "format": MODEL_FORMAT,
            "buckets_per_kind": BUCKETS,
            "min_words": MIN_WORDS,
            "intercept": self.intercept,
            "threshold": self.threshold,
            "veto": self.veto,
            "trained_on": self.trained_on,
            **kinds,
        }

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> TextModel:
        if doc.get("format") != MODEL_FORMAT or doc.get("buckets_per_kind") != BUCKETS:
            raise ValueError(
                f"scanner model: expected {MODEL_FORMAT} with {BUCKETS} buckets, got "
                f"{doc.get('format')!r} with {doc.get('buckets_per_kind')!r}"
            )
        idf = tuple(dict(zip(doc[k]["buckets"], doc[k]["idf"], strict=True)) for k in KINDS)
        coef = tuple(dict(zip(doc[k]["buckets"], doc[k]["coef"], strict=True)) for k in KINDS)
        return cls(
            idf=(idf[0], idf[1]),
            coef=(coef[0], coef[1]),
            intercept=float(doc["intercept"]),
            threshold=float(doc["threshold"]),
            trained_on=dict(doc.get("trained_on") or {}),
            veto=float(doc.get("veto", 0.0)),
        )

    def dump(self) -> bytes:
        """The model file's bytes: gzip of sorted JSON, no timestamp (the same model, the same
        bytes)."""
        text = json.dumps(self.to_json(), sort_keys=True, separators=(",", ":"))
        return gzip.compress(text.encode("utf-8"), mtime=0)

    @classmethod
    def load_bytes(cls, data: bytes) -> TextModel:
        doc: dict[str, Any] = json.loads(gzip.decompress(data))
        return cls.from_json(doc)


@cache
def shipped_model() -> TextModel:
    """The model packaged with toolwatch (read once per process)."""
    data = resources.files(__package__).joinpath(MODEL_RESOURCE).read_bytes()
    return TextModel.load_bytes(data)
