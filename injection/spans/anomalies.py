"""The study's seven anomalies (BRIEF §3) as injectors: exfiltration (three sizes), out-of-scope
tool, runaway retry, burst and sequence hijack.

Each is a small labelled transform of ONE session's calls at a given position; everything
random comes from the ``numpy.random.Generator`` passed in, so a seed fixes the result.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from toolwatch.injection.spans.context import InjectionContext, ToolPool
from toolwatch.injection.spans.contract import NOTE_READ_PAIR, Injection, InjectionError
from toolwatch.injection.spans.editing import ROW_FIELDS, fresh_responses, insert_rows, retime_calls
from toolwatch.injection.spans.kinds import (
    BurstParams,
    ExfiltrationParams,
    HijackParams,
    OutOfScopeParams,
    RunawayParams,
)
from toolwatch.injection.spans.session_arrays import SessionCalls
from toolwatch.record import split_mcp_name
from toolwatch.words import counted


def _rows_from_pools(
    context: InjectionContext, tools: Sequence[str], rng: np.random.Generator
) -> dict[str, np.ndarray]:
    """One copied (size, outcome) row per tool, drawn from that tool's observed calls."""
    rows: dict[str, list[object]] = {name: [] for name in ROW_FIELDS}
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


def inject_exfiltration(
    kind: str,
    session: SessionCalls,
    position: int,
    rng: np.random.Generator,
    context: InjectionContext,
    params: ExfiltrationParams,
    bounds: tuple[int, int],
) -> Injection:
    """One network call right after a Read (the three exfiltration kinds), its input bytes
    k·σ above the tool's training mean; with no Read in ``bounds`` a Read + network pair."""
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
    return insert_rows(kind, session, at, rows, context.sample_gaps(rng, len(row_tools)), note)


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


def inject_out_of_scope(
    kind: str,
    session: SessionCalls,
    position: int,
    rng: np.random.Generator,
    context: InjectionContext,
    params: OutOfScopeParams,
) -> Injection:
    """``params.calls`` calls of one rarely used tool the stream has nothing to do with.

    The study's condition is a tool of an MCP server the session never touched, with at most
    ``max_training_calls`` training calls. For built-in tools (no server) the same rarity is
    the condition, with the tool itself never used in the stream (issue 12): a corpus whose
    training holds no MCP server can still be measured.
    """
    touched = {_server_of(t, s) for t, s in zip(session["tool"], session["server"], strict=True)}
    touched.discard(None)
    used = set(session["tool"].tolist())
    cand = sorted(
        t
        for t, pool in context.pools.items()
        if 1 <= context.training_counts.get(t, 0) <= params.max_training_calls
        and (pool.server not in touched if pool.server is not None else t not in used)
    )
    if not cand:
        raise InjectionError(
            f"no tool with 1–{counted(params.max_training_calls, 'training call')} that the stream "
            "never "
            "touched (no MCP server of it untouched, no such built-in unused)"
        )
    tool = cand[int(rng.integers(len(cand)))]
    rows = _rows_from_pools(context, [tool] * params.calls, rng)
    return insert_rows(kind, session, position, rows, context.sample_gaps(rng, params.calls))


def inject_runaway(
    kind: str,
    session: SessionCalls,
    position: int,
    rng: np.random.Generator,
    context: InjectionContext,
    params: RunawayParams,
) -> Injection:
    """The previous call repeated, most repeats failing, each repeat its own response."""
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
    return insert_rows(kind, session, position, rows, gaps)


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


def inject_burst(
    kind: str,
    session: SessionCalls,
    position: int,
    rng: np.random.Generator,
    context: InjectionContext,
    params: BurstParams,
) -> Injection:
    """The next ``params.calls`` calls re-timed to fast gaps: each its own response (``burst``)
    or all in the previous call's response (``control_same_response_burst``)."""
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
        responses = fresh_responses(kind, m)
    calls = retime_calls(session, position, gaps, responses, kind)
    return Injection(calls, kind, position, m, note)


def inject_hijack(
    kind: str,
    session: SessionCalls,
    position: int,
    rng: np.random.Generator,
    context: InjectionContext,
    params: HijackParams,
) -> Injection:
    """``params.calls`` tools drawn uniformly from the training vocabulary, sizes and outcomes
    copied from training calls of each."""
    vocab = context.vocabulary
    tools = [vocab[i] for i in rng.integers(len(vocab), size=params.calls)]
    rows = _rows_from_pools(context, tools, rng)
    return insert_rows(kind, session, position, rows, context.sample_gaps(rng, params.calls))
