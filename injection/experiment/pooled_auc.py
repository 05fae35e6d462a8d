"""Per-call AUC of one kind pooled over seeds, without keeping every seed's calls.

The experiment injects and scores one seed at a time, so its memory stays that of one seed
(a 100,000-call test stream held 4.2 GB with five seeds when every seed's scores were kept for
the AUC). The AUC is a Mann–Whitney U over the injected calls (positives) and every other call
of the injected sessions (negatives), pooled over seeds. A run's negatives are, call for call,
mostly its normal stream's calls with the same scores, so the negatives are kept as a multiset:
the normal streams' scores (held once per variant) counted once per run, plus the calls of a
run whose score differs from the aligned normal call's, minus the aligned normal calls' scores
they replace. The U counted against that multiset is exactly the one the ranks give
(:func:`toolwatch.injection.experiment.metrics.auc`), whatever the injection changed.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

import toolwatch.injection.experiment.metrics as M


def _ranges(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """``starts[r] + 0 .. counts[r] - 1`` for every ``r``, laid end to end."""
    counts = np.asarray(counts, dtype=np.int64)
    total = int(counts.sum())
    offsets = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
    return np.repeat(np.asarray(starts, dtype=np.int64) - offsets, counts) + np.arange(total)


@dataclass(frozen=True, slots=True)
class Alignment:
    """Where one batch of runs' negative calls sit against their normal streams' calls.

    Aligned pairs: a run's calls before the insertion point with the normal stream's calls at
    the same place, and its calls after the injected ones with the normal stream's last calls.
    The rest of a run's negatives are ``unaligned`` (counted as added) and the rest of the
    normal calls ``removed``.
    """

    run: np.ndarray  # index into the batch's calls of each aligned negative
    ref: np.ndarray  # index into the normal calls of its partner
    unaligned: np.ndarray  # batch calls with no partner
    removed: np.ndarray  # normal calls with no partner
    positive: np.ndarray  # batch calls injected (the positives)

    @classmethod
    def build(
        cls,
        layout: M.RunLayout,
        streams: np.ndarray,
        normal_starts: np.ndarray,
        normal_lengths: np.ndarray,
    ) -> Alignment:
        base = np.asarray(normal_starts, dtype=np.int64)[streams]
        length = np.asarray(normal_lengths, dtype=np.int64)[streams]
        p, ins = layout.positions, layout.inserted
        head = np.minimum(p, length)  # aligned prefix
        tail = layout.lengths - p - ins  # run calls after the injected ones
        kept = np.minimum(tail, length - head)  # of them, aligned with the normal stream's end
        run = np.concatenate(
            [
                _ranges(layout.starts, head),
                _ranges(layout.starts + layout.lengths - kept, kept),
            ]
        )
        ref = np.concatenate([_ranges(base, head), _ranges(base + length - kept, kept)])
        unaligned = np.concatenate(
            [
                _ranges(layout.starts + head, p - head),
                _ranges(layout.starts + p + ins, tail - kept),
            ]
        )
        removed = _ranges(base + head, length - kept - head)
        positive = _ranges(layout.starts + p, ins)
        return cls(run, ref, unaligned, removed, positive)


@dataclass
class PooledAUC:
    """One (kind, cue set)'s AUC over every seed added; ``reference`` is the normal calls'
    score (NaN as -inf, as ranked), the normal streams laid end to end, ``lengths`` their
    calls."""

    reference: np.ndarray
    lengths: np.ndarray
    runs: np.ndarray = field(init=False)  # per normal stream: runs added on it
    positives: list[np.ndarray] = field(default_factory=list)
    added: list[np.ndarray] = field(default_factory=list)
    removed: list[np.ndarray] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.runs = np.zeros(len(self.lengths), dtype=np.int64)

    def add(self, scores: np.ndarray, alignment: Alignment, streams: np.ndarray) -> None:
        """One seed's runs: ``scores`` per call of the batch, ``streams`` per run."""
        x = M.nan_as_lowest(scores)
        mine, theirs = x[alignment.run], self.reference[alignment.ref]
        differ = mine != theirs
        self.positives.append(x[alignment.positive])
        self.added.append(np.concatenate([mine[differ], x[alignment.unaligned]]))
        self.removed.append(np.concatenate([theirs[differ], self.reference[alignment.removed]]))
        self.runs += np.bincount(streams, minlength=self.runs.size)

    def value(self) -> float:
        """The Mann–Whitney AUC, ties counted half (NaN without positives or negatives)."""
        pos = np.concatenate(self.positives) if self.positives else np.zeros(0)
        added = np.sort(np.concatenate(self.added)) if self.added else np.zeros(0)
        removed = np.sort(np.concatenate(self.removed)) if self.removed else np.zeros(0)
        weight = np.repeat(self.runs, self.lengths)  # per normal call: runs counting it
        n_pos = int(pos.size)
        n_neg = int(weight.sum()) + added.size - removed.size
        if n_pos == 0 or n_neg == 0:
            return float("nan")
        order = np.argsort(self.reference, kind="stable")
        ref = self.reference[order]
        cum = np.concatenate([[0], np.cumsum(weight[order])])

        def below_twice(sorted_values: np.ndarray, cumulative: np.ndarray | None) -> int:
            """Σ over positives of 2·#below + #equal, i.e. #below + #not-above."""
            lo = np.searchsorted(sorted_values, pos, side="left")
            hi = np.searchsorted(sorted_values, pos, side="right")
            if cumulative is not None:
                lo, hi = cumulative[lo], cumulative[hi]
            return int(lo.sum()) + int(hi.sum())

        twice_u = below_twice(ref, cum) + below_twice(added, None) - below_twice(removed, None)
        return float(twice_u / 2.0 / (n_pos * n_neg))
