"""What injectors borrow from normal behaviour, taken from the training split only: per-tool
calls to copy sizes and outcomes from, the size cue's ``log1p`` input mean and σ,
different-response gaps, donor streams and the tool vocabulary.

Nothing comes from the test split: an injected call copied from a test call (or a hijack drawn
from tools that first appear after training) would carry the very drift the detector is being
measured on (issue 12: sequence hijack's all·CUSUM rose from 0.066 to 0.097 on dev-real that
way, because tools unseen in training all score ``<unk>``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from toolwatch import study
from toolwatch.conventions import EGRESS_NONE
from toolwatch.injection.spans.contract import InjectionError
from toolwatch.injection.spans.kinds import ExfiltrationParams
from toolwatch.injection.spans.session_arrays import (
    FIELD_NAMES,
    US_PER_S,
    SessionCalls,
    split_sessions,
)
from toolwatch.record import split_mcp_name


def log_bytes(x: np.ndarray | float) -> np.ndarray:
    """The size cue's basis, ``ln(1 + bytes)`` (so σ here is the σ the detector sees)."""
    return np.log1p(np.maximum(np.asarray(x, dtype=np.float64), 0.0))


@dataclass(frozen=True, slots=True)
class ToolPool:
    """Observed calls of one tool (sizes and outcomes only) to copy injected calls from."""

    server: str | None
    input_bytes: np.ndarray
    output_bytes: np.ndarray
    failed: np.ndarray
    error_type: np.ndarray
    duration_us: np.ndarray

    def __len__(self) -> int:
        return len(self.input_bytes)


@dataclass(frozen=True, slots=True)
class Carriers:
    """Training calls of one egress class with provenance measured: the calls an exfiltration
    with provenance copies its tool, sizes and duration from."""

    tool: np.ndarray
    server: np.ndarray
    input_bytes: np.ndarray
    output_bytes: np.ndarray
    duration_us: np.ndarray

    def __len__(self) -> int:
        return len(self.tool)


@dataclass(frozen=True)
class InjectionContext:
    """What injectors need to know about normal behaviour, taken from the training split."""

    pools: Mapping[str, ToolPool]
    training_counts: Mapping[str, int]
    log_input: Mapping[str, tuple[float, float]]
    vocabulary: tuple[str, ...]
    gaps_s: np.ndarray
    donors: tuple[SessionCalls, ...]
    failures: ToolPool | None = None
    #: egress class -> its measured training calls (empty when the corpus has no provenance)
    carriers: Mapping[str, Carriers] = field(default_factory=dict)
    _donor_cache: dict[int, tuple[SessionCalls, ...]] = field(
        default_factory=dict, repr=False, compare=False
    )

    @classmethod
    def build(cls, train: pa.Table) -> InjectionContext:
        """Context from the training calls (a calls table)."""
        return cls.from_sessions(split_sessions(train))

    @classmethod
    def from_sessions(cls, sessions: Sequence[SessionCalls]) -> InjectionContext:
        """:meth:`build` from training streams already split into column arrays."""
        if not sessions:
            raise InjectionError("the training split holds no calls")
        names = [k for k in FIELD_NAMES if k in sessions[0].columns]
        cols = {k: np.concatenate([s.columns[k] for s in sessions]) for k in names}
        pools, counts, log_input = _pools(cols)
        failures = _pool(cols, cols["failed"]) if cols["failed"].any() else None
        vocab = set(pools)
        gaps = [_different_response_gaps(s) for s in sessions]
        donors = tuple(s for s in sessions if not s["restamped"].any())
        return cls(
            pools=pools,
            training_counts=counts,
            log_input=log_input,
            vocabulary=tuple(sorted(vocab)),
            gaps_s=np.sort(np.concatenate(gaps)) if gaps else np.zeros(0),
            donors=donors,
            failures=failures,
            carriers=_carriers(cols),
        )

    def network_tools(self, params: ExfiltrationParams) -> list[str]:
        """Network tools usable for exfiltration: known in training, with a size spread."""
        names = params.network_tools
        if names is None:
            names = tuple(t for t in self.log_input if is_network_tool(t))
        return sorted(t for t in names if t in self.log_input and self.log_input[t][1] > 0)

    def donors_with(self, calls: int) -> tuple[SessionCalls, ...]:
        """Training sessions with at least ``calls`` calls (cached per length)."""
        if calls not in self._donor_cache:
            self._donor_cache[calls] = tuple(d for d in self.donors if len(d) >= calls)
        return self._donor_cache[calls]

    def sample_gaps(self, rng: np.random.Generator, size: int) -> np.ndarray:
        """Different-response gaps drawn from training (the study's median if none exist)."""
        if self.gaps_s.size:
            return rng.choice(self.gaps_s, size=size)
        return np.full(size, float(study.CORPUS["inter_response_gap_median_s"]))


def is_network_tool(tool: str) -> bool:
    """WebFetch, or a tool that opens a URL (``browser_navigate``, ``puppeteer_navigate``…)."""
    return tool == "WebFetch" or split_mcp_name(tool)[1].lower().endswith("navigate")


def _pool(cols: Mapping[str, np.ndarray], mask: np.ndarray) -> ToolPool:
    servers = cols["server"][mask]
    return ToolPool(
        server=next((s for s in servers if s is not None), None),
        input_bytes=cols["input_bytes"][mask],
        output_bytes=cols["output_bytes"][mask],
        failed=cols["failed"][mask],
        error_type=cols["error_type"][mask],
        duration_us=_column(cols, "duration_us", mask),
    )


def _column(cols: Mapping[str, np.ndarray], name: str, mask: np.ndarray) -> np.ndarray:
    """A nullable numeric column under ``mask``, all-null (NaN) when the column is absent."""
    col = cols.get(name)
    return np.full(int(mask.sum()), np.nan) if col is None else col[mask]


def _pools(
    cols: Mapping[str, np.ndarray],
) -> tuple[dict[str, ToolPool], dict[str, int], dict[str, tuple[float, float]]]:
    tools = cols["tool"]
    names, inverse = np.unique(tools.astype(str), return_inverse=True)
    pools: dict[str, ToolPool] = {}
    counts: dict[str, int] = {}
    log_input: dict[str, tuple[float, float]] = {}
    for i, name in enumerate(names.tolist()):
        mask = inverse == i
        pool = _pool(cols, mask)
        if pool.server is None:  # a store without server names: Claude-Code style names
            pool = dataclasses.replace(pool, server=split_mcp_name(name)[0])
        pools[name] = pool
        counts[name] = int(mask.sum())
        logs = log_bytes(pool.input_bytes)
        sd = float(logs.std(ddof=1)) if len(logs) > 1 else 0.0  # sample sd, like the cue
        log_input[name] = (float(logs.mean()), sd)
    return pools, counts, log_input


def _carriers(cols: Mapping[str, np.ndarray]) -> dict[str, Carriers]:
    """Per sending egress class, its training calls whose payload was measured (not failed)."""
    egress, payload = cols.get("egress"), cols.get("payload_longest")
    if egress is None or payload is None:
        return {}
    measured = ~np.isnan(payload.astype(np.float64)) & ~cols["failed"]
    out: dict[str, Carriers] = {}
    for cls in sorted({e for e in egress.tolist() if e is not None and e != EGRESS_NONE}):
        mask = measured & (egress == cls)
        if mask.any():
            out[str(cls)] = Carriers(
                tool=cols["tool"][mask],
                server=cols["server"][mask],
                input_bytes=cols["input_bytes"][mask],
                output_bytes=cols["output_bytes"][mask],
                duration_us=_column(cols, "duration_us", mask),
            )
    return out


def _different_response_gaps(session: SessionCalls) -> np.ndarray:
    if len(session) < 2:
        return np.zeros(0)
    t = session["start_time"]
    gaps = np.diff(t) / US_PER_S
    keep = session.response_starts()[1:] & ~session["restamped"][1:] & ~session["restamped"][:-1]
    return gaps[keep & (gaps >= 0)]
