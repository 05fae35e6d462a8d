"""Step 4 of the protocol: every kind injected once per (seed, test session), at an insertion
point shared by every kind; and the same injections as full labelled call records.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

import toolwatch.injection.experiment.metrics as M
from toolwatch.injection.experiment.config import ExperimentConfig
from toolwatch.injection.experiment.split import split_by_time
from toolwatch.injection.spans.context import InjectionContext
from toolwatch.injection.spans.contract import InjectionError
from toolwatch.injection.spans.kinds import ALL_KINDS, DEFAULT_PARAMS
from toolwatch.injection.spans.registry import draw_position, inject
from toolwatch.injection.spans.session_arrays import SessionCalls, split_sessions, to_table


@dataclass
class KindRuns:
    """The injected sessions of one kind, seed-major, with where each anomaly sits."""

    kind: str
    sessions: list[SessionCalls]
    seed: np.ndarray  # per run
    session_index: np.ndarray  # per run: index into the test sessions
    positions: np.ndarray
    inserted: np.ndarray
    notes: list[str]
    skipped: dict[str, int]  # reason -> runs that could not be placed

    @property
    def layout(self) -> M.RunLayout:
        lengths = np.array([len(s) for s in self.sessions], dtype=np.int64)
        return M.RunLayout.build(lengths, self.positions, self.inserted)

    def note_counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for n in self.notes:
            if n:
                out[n] = out.get(n, 0) + 1
        return out


def build_runs(
    test: Sequence[SessionCalls],
    context: InjectionContext,
    config: ExperimentConfig,
    kinds: Sequence[str] | None = None,
    progress: Callable[[int], Any] | None = None,
) -> dict[str, KindRuns]:
    """Inject every kind once per (seed, test session).

    The insertion point is drawn once per (seed, session) from ``default_rng([seed, i])`` and
    shared by every kind; a kind's own randomness comes from ``default_rng([seed, i, 1 + k])``
    (``k`` its index in :data:`ALL_KINDS`), so a subset of kinds reproduces the same runs.
    """
    kinds = tuple(kinds or config.kinds)
    acc: dict[str, dict[str, Any]] = {
        k: {"sessions": [], "seed": [], "index": [], "pos": [], "ins": [], "notes": [], "skip": {}}
        for k in kinds
    }
    for seed in config.seeds:
        for i, s in enumerate(test):
            position = draw_position(
                s, np.random.default_rng([seed, i]), head=config.head, tail=config.tail
            )
            bounds = (config.head, len(s) - config.tail)
            for kind in kinds:
                a = acc[kind]
                rng = np.random.default_rng([seed, i, 1 + ALL_KINDS.index(kind)])
                params = config.params.get(kind, DEFAULT_PARAMS[kind])
                try:
                    inj = inject(kind, s, position, rng, context, params, bounds=bounds)
                except InjectionError as exc:
                    a["skip"][str(exc)] = a["skip"].get(str(exc), 0) + 1
                    continue
                a["sessions"].append(inj.calls)
                a["seed"].append(seed)
                a["index"].append(i)
                a["pos"].append(inj.position)
                a["ins"].append(inj.inserted)
                a["notes"].append(inj.note)
        if progress:
            progress(1)
    return {
        k: KindRuns(
            kind=k,
            sessions=a["sessions"],
            seed=np.array(a["seed"], dtype=np.int64),
            session_index=np.array(a["index"], dtype=np.int64),
            positions=np.array(a["pos"], dtype=np.int64),
            inserted=np.array(a["ins"], dtype=np.int64),
            notes=a["notes"],
            skipped=a["skip"],
        )
        for k, a in acc.items()
    }


# ------------------------------------------------------------------------------ labelled copies


def injected_calls(
    calls: pa.Table,
    config: ExperimentConfig,
    *,
    seed: int | None = None,
    kinds: Sequence[str] | None = None,
) -> pa.Table:
    """Full call records of one seed's injected sessions, ready for ``Store.append("calls")``.

    The same injections as the experiment's runs of that seed (nothing random depends on which
    columns a session carries). Session ids become ``<session>~<kind>~s<seed>`` and every span
    id is re-derived so the copies never collide with the originals; injected calls carry
    ``label = kind``, so :func:`~toolwatch.injection.experiment.split.normal_sessions` keeps
    them out of later experiments.
    """
    seed = config.seeds[0] if seed is None else seed
    sessions = [s for s in split_sessions(calls) if all(v is None for v in s["label"])]
    split = split_by_time(sessions, config)
    context = InjectionContext.from_sessions(split.train)
    one_seed = dataclasses.replace(config, seeds=(seed,))
    runs = build_runs(split.test, context, one_seed, kinds)
    out: list[SessionCalls] = []
    for kind, kind_runs in runs.items():
        for s in kind_runs.sessions:
            sid = f"{s.session_id}~{kind}~s{seed}"
            spans = np.array(
                [
                    hashlib.blake2b(f"{sid}/{span}/{i}".encode(), digest_size=8).hexdigest()
                    for i, span in enumerate(s["span_id"])
                ],
                dtype=object,
            )
            out.append(s.replace(session_id=np.full(len(s), sid, dtype=object), span_id=spans))
    return to_table(out)
