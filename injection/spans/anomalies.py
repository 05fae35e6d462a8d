"""Span-level anomaly injection: the study's seven anomalies and two controls (BRIEF §3).

Each injector is a small labelled transform of ONE session's calls
(:class:`~toolwatch.injection.spans.session_arrays.SessionCalls`): it inserts or re-times a few
calls
at a given position and returns the new session with the injected calls labelled by the kind
name. Everything random comes from the ``numpy.random.Generator`` passed in, so a seed fixes
the result. Values the injected calls need from normal behaviour (sizes, gaps, donor sessions,
the tool vocabulary) come from the training split through :class:`InjectionContext`.

Rules shared by every kind, so the detectors see only the anomaly and not an artefact of the
edit:

* inserted calls start new model responses (fresh response ids); their gaps are the kind's own
  (runaway: 1.5–4 s) or drawn from the training split's different-response gaps;
* the calls after the insertion keep their own gaps: the rest of the session moves in time;
* re-timed calls (the bursts) leave the session's later calls with their gaps too, and a later
  call that shared a response with the last re-timed call still shares it afterwards;
* ``seq`` is re-numbered 0..n-1.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

import numpy as np
import pyarrow as pa

from toolwatch import study
from toolwatch.injection.spans.session_arrays import (
    FIELD_NAMES,
    SessionCalls,
    split_sessions,
    table_columns,
)
from toolwatch.record import split_mcp_name

#: Kind keys, in the study's table order (the keys of ``study.DETECTION_ALL_CUSUM``).
KINDS: Final[tuple[str, ...]] = tuple(study.DETECTION_ALL_CUSUM)
CONTROL_KINDS: Final[tuple[str, ...]] = tuple(k for k in KINDS if k.startswith("control_"))
ANOMALY_KINDS: Final[tuple[str, ...]] = tuple(k for k in KINDS if k not in CONTROL_KINDS)

#: Note set on an exfiltration whose session had no Read before any allowed position.
NOTE_READ_PAIR: Final = "read_pair_inserted"
#: Note set when the insertion point falls inside a model response (no boundary was usable).
NOTE_MID_RESPONSE: Final = "mid_response"

_INHERITED = ("session_id", "agent_id", "trace_id", "source", "service")
_ROW_FIELDS = (
    "tool",
    "server",
    "input_bytes",
    "output_bytes",
    "failed",
    "error_type",
    "duration_us",
)
_US = 1_000_000


class InjectionError(ValueError):
    """The anomaly cannot be placed in this session (the message says why)."""


# ------------------------------------------------------------------------------ parameters


@dataclass(frozen=True, slots=True)
class ExfiltrationParams:
    """One network call after a Read, input = tool mean + k·σ of training log input bytes."""

    sigma_low: float
    sigma_high: float
    #: network tools; ``None`` = WebFetch and every ``…navigate`` tool seen in training (a
    #: browser's go-to-URL; not ``navigate_back``, which takes no URL)
    network_tools: tuple[str, ...] | None = None
    read_tools: tuple[str, ...] = ("Read",)


@dataclass(frozen=True, slots=True)
class OutOfScopeParams:
    calls: int = 3
    max_training_calls: int = 40


@dataclass(frozen=True, slots=True)
class RunawayParams:
    repeats: int = 15
    failure_share: float = 0.7
    gap_s: tuple[float, float] = (1.5, 4.0)


@dataclass(frozen=True, slots=True)
class BurstParams:
    calls: int = 10
    gap_s: tuple[float, float] = (0.05, 0.8)
    #: False: every re-timed call is its own response; True: they join the previous response
    same_response: bool = False


@dataclass(frozen=True, slots=True)
class HijackParams:
    calls: int = 8


@dataclass(frozen=True, slots=True)
class OtherNormalParams:
    calls: int = 8


KindParams = (
    ExfiltrationParams
    | OutOfScopeParams
    | RunawayParams
    | BurstParams
    | HijackParams
    | OtherNormalParams
)

DEFAULT_PARAMS: Final[dict[str, KindParams]] = {
    "burst": BurstParams(),
    "runaway_retry": RunawayParams(),
    "sequence_hijack": HijackParams(),
    "large_exfiltration": ExfiltrationParams(4.0, 8.0),
    "exfiltration_2sigma": ExfiltrationParams(2.0, 2.0),
    "key_exfiltration": ExfiltrationParams(1.0, 1.0),
    "out_of_scope_tool": OutOfScopeParams(),
    "control_other_normal": OtherNormalParams(),
    "control_same_response_burst": BurstParams(same_response=True),
}


def params_to_dict(params: Mapping[str, KindParams]) -> dict[str, dict[str, object]]:
    """JSON-ready parameters (saved with experiment results so a run can be repeated)."""
    out: dict[str, dict[str, object]] = {}
    for kind, p in params.items():
        out[kind] = {"type": type(p).__name__} | {
            name: getattr(p, name) for name in p.__dataclass_fields__
        }
    return out


def params_from_dict(data: Mapping[str, Mapping[str, object]]) -> dict[str, KindParams]:
    types: dict[str, type] = {
        t.__name__: t
        for t in (
            ExfiltrationParams,
            OutOfScopeParams,
            RunawayParams,
            BurstParams,
            HijackParams,
            OtherNormalParams,
        )
    }
    out: dict[str, KindParams] = {}
    for kind, values in data.items():
        kw = {k: (tuple(v) if isinstance(v, list) else v) for k, v in values.items()}
        cls = types[str(kw.pop("type"))]
        out[kind] = cls(**kw)
    return out


# ------------------------------------------------------------------------------ context


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
    _donor_cache: dict[int, tuple[SessionCalls, ...]] = field(
        default_factory=dict, repr=False, compare=False
    )

    @classmethod
    def build(cls, train: pa.Table, corpus: pa.Table | None = None) -> InjectionContext:
        """Context from the training calls; ``corpus`` (e.g. the whole store) adds the tools
        never seen in training to the vocabulary (sequence hijack draws from all tools)."""
        return cls.from_sessions(split_sessions(train), corpus)

    @classmethod
    def from_sessions(
        cls, sessions: Sequence[SessionCalls], corpus: pa.Table | None = None
    ) -> InjectionContext:
        """:meth:`build` from training sessions already split into column arrays."""
        if not sessions:
            raise InjectionError("the training split holds no calls")
        names = [k for k in FIELD_NAMES if k in sessions[0].columns]
        cols = {k: np.concatenate([s.columns[k] for s in sessions]) for k in names}
        pools, counts, log_input = _pools(cols)
        failures = _pool(cols, cols["failed"]) if cols["failed"].any() else None
        vocab = set(pools)
        if corpus is not None and corpus.num_rows:
            wanted = ("tool", "server", "input_bytes", "output_bytes", "failed", "error_type")
            extra_pools, _, _ = _pools(table_columns(corpus, wanted))
            for tool, pool in extra_pools.items():
                if tool not in pools:
                    pools[tool] = pool
            vocab |= set(extra_pools)
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


def _different_response_gaps(session: SessionCalls) -> np.ndarray:
    if len(session) < 2:
        return np.zeros(0)
    t = session["start_time"]
    gaps = np.diff(t) / _US
    keep = session.response_starts()[1:] & ~session["restamped"][1:] & ~session["restamped"][:-1]
    return gaps[keep & (gaps >= 0)]


# ------------------------------------------------------------------------------ result


@dataclass(frozen=True, slots=True)
class Injection:
    """An injected session: where the anomaly starts and how many calls carry its label."""

    calls: SessionCalls
    kind: str
    position: int  # index of the first injected call in ``calls``
    inserted: int  # labelled calls (inserted or re-timed)
    note: str = ""


# ------------------------------------------------------------------------------ editing helpers


def _fresh_span_ids(anchor_span: object, label: str, size: int) -> np.ndarray:
    """Span ids for inserted calls, derived from the anchor call's id (no random draw, so an
    injection is the same whichever columns the session carries)."""
    base = f"{anchor_span}/{label}"
    return np.array(
        [hashlib.blake2b(f"{base}/{j}".encode(), digest_size=8).hexdigest() for j in range(size)],
        dtype=object,
    )


def _fresh_responses(kind: str, size: int, start: int = 0) -> np.ndarray:
    return np.array([f"injected:{kind}:{start + j}" for j in range(size)], dtype=object)


def _rows_from_pools(
    context: InjectionContext, tools: Sequence[str], rng: np.random.Generator
) -> dict[str, np.ndarray]:
    """One copied (size, outcome) row per tool, drawn from that tool's observed calls."""
    rows: dict[str, list[object]] = {name: [] for name in _ROW_FIELDS}
    for tool in tools:
        pool = context.pools.get(tool)
        if pool is None or len(pool) == 0:
            raise InjectionError(f"no observed calls of tool {tool!r} to copy sizes from")
        j = int(rng.integers(len(pool)))
        rows["tool"].append(tool)
        rows["server"].append(pool.server)
        rows["input_bytes"].append(float(pool.input_bytes[j]))
        rows["output_bytes"].append(float(pool.output_bytes[j]))
        rows["failed"].append(bool(pool.failed[j]))
        rows["error_type"].append(pool.error_type[j])
        rows["duration_us"].append(float(pool.duration_us[j]))
    return {
        "tool": np.array(rows["tool"], dtype=object),
        "server": np.array(rows["server"], dtype=object),
        "input_bytes": np.array(rows["input_bytes"], dtype=np.float64),
        "output_bytes": np.array(rows["output_bytes"], dtype=np.float64),
        "failed": np.array(rows["failed"], dtype=bool),
        "error_type": np.array(rows["error_type"], dtype=object),
        "duration_us": np.array(rows["duration_us"], dtype=np.float64),
    }


def _filled(session: SessionCalls, name: str, m: int, anchor: int) -> np.ndarray:
    col = session.columns[name]
    if name in _INHERITED:
        return np.repeat(col[anchor : anchor + 1], m)
    if col.dtype == bool:
        return np.zeros(m, dtype=bool)
    if col.dtype.kind == "f":
        return np.full(m, np.nan)
    return np.full(m, None, dtype=object)


def insert_calls(
    session: SessionCalls,
    position: int,
    rows: Mapping[str, np.ndarray],
    gaps_s: np.ndarray,
    label: str,
) -> SessionCalls:
    """Insert calls before index ``position``; later calls keep their gaps (time shift).

    ``rows`` gives the inserted calls' fields (at least ``tool`` and ``response_id``);
    ``gaps_s[j]`` is the gap before inserted call j. Session, agent, trace, source and service
    are those of the call before the insertion point; span ids are derived from its span id.
    """
    n, m = len(session), len(gaps_s)
    if not 1 <= position <= n:
        raise InjectionError(f"insertion position {position} outside 1..{n}")
    anchor = position - 1
    t = session["start_time"]
    t_new = t[anchor] + np.cumsum(np.round(np.asarray(gaps_s) * _US)).astype(np.int64)
    shift = int(t_new[-1] - t[anchor]) if m else 0
    out: dict[str, np.ndarray] = {}
    for name, col in session.columns.items():
        if name == "start_time":
            out[name] = np.concatenate([t[:position], t_new, t[position:] + shift])
            continue
        if name in rows:
            ins = np.asarray(rows[name], dtype=col.dtype)
        elif name == "span_id":
            ins = _fresh_span_ids(col[anchor], label, m)
        elif name == "label":
            ins = np.full(m, label, dtype=object)
        else:
            ins = _filled(session, name, m, anchor)
        out[name] = np.concatenate([col[:position], ins, col[position:]])
    if "seq" in out:
        out["seq"] = np.arange(n + m, dtype=np.float64)
    return SessionCalls(out)


def retime_calls(
    session: SessionCalls,
    position: int,
    gaps_s: np.ndarray,
    responses: np.ndarray,
    label: str,
) -> SessionCalls:
    """Set the gaps before calls ``position..position+m-1`` and their response ids.

    Later calls keep their own gaps (shifted in time) and a later call that shared a response
    with the last re-timed call joins that call's new response.
    """
    n, m = len(session), len(gaps_s)
    if position < 1 or position + m > n:
        # no position in the message: skipped runs are counted per distinct reason
        raise InjectionError(f"fewer than {m} calls from the insertion point on to re-time")
    t = session["start_time"].copy()
    old_last = t[position + m - 1]
    t[position : position + m] = t[position - 1] + np.cumsum(
        np.round(np.asarray(gaps_s) * _US)
    ).astype(np.int64)
    t[position + m :] += t[position + m - 1] - old_last
    resp = session["response_id"].copy()
    last_old = resp[position + m - 1]
    resp[position : position + m] = responses
    if last_old is not None:
        j = position + m
        while j < n and resp[j] == last_old:
            resp[j] = responses[-1]
            j += 1
    label_col = session["label"].copy()
    label_col[position : position + m] = label
    extra = {"seq": np.arange(n, dtype=np.float64)} if "seq" in session.columns else {}
    return session.replace(start_time=t, response_id=resp, label=label_col, **extra)


def _mid_response(session: SessionCalls, position: int) -> bool:
    return position < len(session) and not bool(session.response_starts()[position])


def _inserted(
    kind: str,
    session: SessionCalls,
    position: int,
    rows: Mapping[str, np.ndarray],
    gaps_s: np.ndarray,
    note: str = "",
) -> Injection:
    """Insert ``rows`` before ``position`` as new responses (one each, unless ``rows`` brings
    its own ``response_id``); the note says when the point sits inside a model response."""
    rows = dict(rows)
    rows.setdefault("response_id", _fresh_responses(kind, len(gaps_s)))
    if not note and _mid_response(session, position):
        note = NOTE_MID_RESPONSE
    calls = insert_calls(session, position, rows, gaps_s, kind)
    return Injection(calls, kind, position, len(gaps_s), note)


# ------------------------------------------------------------------------------ injectors


def _exfiltration(
    kind: str,
    session: SessionCalls,
    position: int,
    rng: np.random.Generator,
    context: InjectionContext,
    params: ExfiltrationParams,
    bounds: tuple[int, int],
) -> Injection:
    tools = context.network_tools(params)
    if not tools:
        raise InjectionError(
            "no network tool (WebFetch / browser navigate) with a size spread in training"
        )
    tool = tools[int(rng.integers(len(tools)))]
    mean, sd = context.log_input[tool]
    k = float(rng.uniform(params.sigma_low, params.sigma_high))
    size = float(round(math.expm1(mean + k * sd)))
    at = _after_read(session, position, bounds, params.read_tools)
    note = ""
    if at is None:
        reads = [t for t in params.read_tools if t in context.pools]
        if not reads:
            raise InjectionError(f"no Read call ({', '.join(params.read_tools)}) seen in training")
        row_tools = [reads[0], tool]
        note = NOTE_READ_PAIR
        at = position
    else:
        row_tools = [tool]
    rows = _rows_from_pools(context, row_tools, rng)
    rows["input_bytes"][-1] = size
    rows["failed"][:] = False  # the Read succeeded and so did the exfiltrating call
    rows["error_type"][:] = None
    return _inserted(kind, session, at, rows, context.sample_gaps(rng, len(row_tools)), note)


def _after_read(
    session: SessionCalls, position: int, bounds: tuple[int, int], read_tools: Sequence[str]
) -> int | None:
    """The allowed insertion point right after a Read nearest to ``position``.

    Points that also open a new response are preferred (the inserted call is a response of
    its own); ties go to the earlier point.
    """
    lo, hi = max(bounds[0], 1), min(bounds[1], len(session))
    if hi < lo:
        return None
    idx = np.arange(lo, hi + 1)
    is_read = np.isin(session["tool"][idx - 1], np.asarray(read_tools, dtype=object))
    cand = idx[is_read]
    if cand.size == 0:
        return None
    starts = np.append(session.response_starts(), True)[cand]
    if starts.any():
        cand = cand[starts]
    return int(cand[np.argmin(np.abs(cand - position))])


def _server_of(tool: object, server: object) -> str | None:
    """The call's MCP server: the recorded one, else the one in an ``mcp__server__tool`` name."""
    if server is not None:
        return str(server)
    return split_mcp_name(str(tool))[0]


def _out_of_scope(
    kind: str,
    session: SessionCalls,
    position: int,
    rng: np.random.Generator,
    context: InjectionContext,
    params: OutOfScopeParams,
) -> Injection:
    touched = {_server_of(t, s) for t, s in zip(session["tool"], session["server"], strict=True)}
    touched.discard(None)
    cand = sorted(
        t
        for t, pool in context.pools.items()
        if pool.server is not None
        and pool.server not in touched
        and 1 <= context.training_counts.get(t, 0) <= params.max_training_calls
    )
    if not cand:
        raise InjectionError(
            "no MCP tool with <= "
            f"{params.max_training_calls} training calls on a server the session never touched"
        )
    tool = cand[int(rng.integers(len(cand)))]
    rows = _rows_from_pools(context, [tool] * params.calls, rng)
    return _inserted(kind, session, position, rows, context.sample_gaps(rng, params.calls))


def _runaway(
    kind: str,
    session: SessionCalls,
    position: int,
    rng: np.random.Generator,
    context: InjectionContext,
    params: RunawayParams,
) -> Injection:
    prev = position - 1
    if prev < 0:
        raise InjectionError("runaway retry needs a previous call")
    r = params.repeats
    n_failed = math.floor(params.failure_share * r + 0.5)
    failed = np.zeros(r, dtype=bool)
    failed[rng.choice(r, size=n_failed, replace=False)] = True
    tool = session["tool"][prev]
    out = np.full(r, session["output_bytes"][prev], dtype=np.float64)
    err = np.full(r, None, dtype=object)
    pool = context.pools.get(str(tool))
    fail_pool = _failed_subpool(pool) or context.failures
    for j in np.flatnonzero(failed):
        if fail_pool is not None and len(fail_pool):
            k = int(rng.integers(len(fail_pool)))
            out[j] = fail_pool.output_bytes[k]
            err[j] = fail_pool.error_type[k]
        if err[j] is None:
            err[j] = "tool_error"
    rows = {
        "tool": np.full(r, tool, dtype=object),
        "server": np.full(r, session["server"][prev], dtype=object),
        "input_bytes": np.full(r, session["input_bytes"][prev], dtype=np.float64),
        "output_bytes": out,
        "duration_us": np.full(r, _value(session, "duration_us", prev), dtype=np.float64),
        "failed": failed,
        "error_type": err,
    }
    gaps = rng.uniform(params.gap_s[0], params.gap_s[1], size=r)
    return _inserted(kind, session, position, rows, gaps)


def _value(session: SessionCalls, name: str, i: int) -> float:
    col = session.columns.get(name)
    return float("nan") if col is None else float(col[i])


def _failed_subpool(pool: ToolPool | None) -> ToolPool | None:
    if pool is None or not pool.failed.any():
        return None
    m = pool.failed
    return ToolPool(
        pool.server,
        pool.input_bytes[m],
        pool.output_bytes[m],
        pool.failed[m],
        pool.error_type[m],
        pool.duration_us[m],
    )


def _burst(
    kind: str,
    session: SessionCalls,
    position: int,
    rng: np.random.Generator,
    context: InjectionContext,
    params: BurstParams,
) -> Injection:
    m = params.calls
    gaps = rng.uniform(params.gap_s[0], params.gap_s[1], size=m)
    note = ""
    if params.same_response:
        joined = session["response_id"][position - 1]
        if joined is None:  # no id to join: give the previous call one, shared by the burst
            joined = f"injected:{kind}:joined"
            resp = session["response_id"].copy()
            resp[position - 1] = joined
            session = session.replace(response_id=resp)
            note = "response_id_assigned"
        responses = np.full(m, joined, dtype=object)
    else:
        responses = _fresh_responses(kind, m)
    calls = retime_calls(session, position, gaps, responses, kind)
    return Injection(calls, kind, position, m, note)


def _hijack(
    kind: str,
    session: SessionCalls,
    position: int,
    rng: np.random.Generator,
    context: InjectionContext,
    params: HijackParams,
) -> Injection:
    vocab = context.vocabulary
    tools = [vocab[i] for i in rng.integers(len(vocab), size=params.calls)]
    rows = _rows_from_pools(context, tools, rng)
    return _inserted(kind, session, position, rows, context.sample_gaps(rng, params.calls))


def _other_normal(
    kind: str,
    session: SessionCalls,
    position: int,
    rng: np.random.Generator,
    context: InjectionContext,
    params: OtherNormalParams,
) -> Injection:
    m = params.calls
    donors = context.donors_with(m)
    if not donors or (len(donors) == 1 and donors[0].session_id == session.session_id):
        raise InjectionError(f"no other training session with >= {m} calls to copy from")
    donor = donors[int(rng.integers(len(donors)))]
    while donor.session_id == session.session_id:  # "another" session
        donor = donors[int(rng.integers(len(donors)))]
    a = int(rng.integers(len(donor) - m + 1))
    block = slice(a, a + m)
    rows = {name: donor[name][block].copy() for name in _ROW_FIELDS if name in donor.columns}
    starts = donor.response_starts()[block].copy()
    starts[0] = True
    rows["response_id"] = _fresh_responses(kind, int(starts.sum()))[np.cumsum(starts) - 1]
    gaps = np.empty(m)
    gaps[0] = context.sample_gaps(rng, 1)[0]
    gaps[1:] = np.diff(donor["start_time"][block]) / _US
    return _inserted(kind, session, position, rows, gaps)


Injector = Callable[..., Injection]

_INJECTORS: Final[dict[str, Injector]] = {
    "burst": _burst,
    "runaway_retry": _runaway,
    "sequence_hijack": _hijack,
    "out_of_scope_tool": _out_of_scope,
    "control_other_normal": _other_normal,
    "control_same_response_burst": _burst,
}


def inject(
    kind: str,
    session: SessionCalls,
    position: int,
    rng: np.random.Generator,
    context: InjectionContext,
    params: KindParams | None = None,
    *,
    bounds: tuple[int, int] | None = None,
) -> Injection:
    """Inject one anomaly of ``kind`` at index ``position`` of ``session``.

    ``bounds`` (inclusive) limits where an exfiltration may move to find a Read just before
    it; by default the whole session. Raises :class:`InjectionError` when the kind cannot be
    placed (e.g. no out-of-scope tool exists for this session).
    """
    if kind not in DEFAULT_PARAMS:
        raise InjectionError(f"unknown anomaly kind {kind!r} (known: {', '.join(KINDS)})")
    p = params if params is not None else DEFAULT_PARAMS[kind]
    if not 1 <= position <= len(session):
        raise InjectionError(f"position {position} outside 1..{len(session)}")
    if isinstance(p, ExfiltrationParams):
        b = bounds if bounds is not None else (1, len(session))
        return _exfiltration(kind, session, position, rng, context, p, b)
    return _INJECTORS[kind](kind, session, position, rng, context, p)


def draw_position(
    session: SessionCalls,
    rng: np.random.Generator,
    *,
    head: int = 10,
    tail: int = 10,
    response_starts_only: bool = True,
) -> int:
    """A random insertion point between call ``head`` and ``tail`` calls before the end.

    With ``response_starts_only`` the point is drawn among calls that open a model response
    (an injected response cannot sit inside another one); if none is in range, any call.
    """
    n = len(session)
    lo, hi = head, n - tail
    if hi < lo or lo < 1:
        raise InjectionError(f"session of {n} calls is too short for head {head}, tail {tail}")
    idx = np.arange(lo, hi + 1)
    if response_starts_only:
        starts = session.response_starts()[idx]
        if starts.any():
            idx = idx[starts]
    return int(idx[int(rng.integers(len(idx)))])
