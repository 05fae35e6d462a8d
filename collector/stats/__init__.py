"""The corpus facts of a store (SQL over its ``calls`` view) beside the study's published ones,
and how they read: the labels and formats ``toolwatch stats`` and the app share."""

from toolwatch.collector.stats.corpus import (
    STAT_KEYS,
    corpus_stats,
    injected_sessions,
    provenance_note,
    source_counts,
)

__all__ = ["STAT_KEYS", "corpus_stats", "injected_sessions", "provenance_note", "source_counts"]
