"""A SIMULATED agent workload with the structure of the study's corpus (BRIEF §2–3).

Why it exists: the study's normal data is one person's private Claude Code history, so the
detection study is reproduced on a workload with the same *structure* — split sizes by time,
tool vocabulary, session habits, response boundaries, gap floors, per-tool sizes and failures,
subagents, and the one real misbehaviour the study's scan found — without being shaped to make
detection easy or hard. Every row says what it is: ``source="simulated"``,
``service="toolwatch-simulator"``, session ids ``sim-…``, response ids ``msg_sim_…``, call ids
``toolu_sim_…``. ``label`` is null everywhere: the retry-loop subagent is unlabelled normal
data, as in the study, where a scan found it.

Identity follows the call record (and the importer): ``session_id`` is the conversation, so a
subagent carries its parent's session id (and trace id) and its own ``agent_id``; ``seq`` counts
the calls of the conversation, main agent and subagents together, by start time. The unit the
study counts as a "session" — and that splits, gaps and detection use — is the *stream*
``(session_id, agent_id)``: 422 streams here, each subagent one of them.

How a corpus is built (numpy, deterministic per seed, well under a second for 422 sessions),
one module a step, tuned in :mod:`.calibration`, over the inventory in :mod:`.tools`:

1. **plan** (:mod:`.plan`) — session counts and exact call totals per split (``study.SPLITS``;
   the test window also holds short sessions, < 30 calls, that the study left out of its test
   split), heavy-tailed session lengths, kinds (coding, ops, research, browser, notes;
   subagents: explore, research, general), a day, a parent session for each subagent, an exact
   MCP call budget per server spread over the sessions that use it, and one session per tool
   that makes sure the whole inventory (78 tools) appears;
2. **sequence** (:mod:`.sequence`) — per session: its own vocabulary and its own habit matrix
   (global affinities × a per-session random preference, so a session repeats its own
   procedures), MCP episodes interleaved with built-in work, model responses of one or more
   calls (parallel calls mostly repeat the first tool), failures (per-tool rate × a per-session
   propensity; a failed call is often retried next);
3. **shape** (:mod:`.shapes`) — per call, per-tool log-normal input/result bytes and durations;
4. **time** (:mod:`.timing`) — within a response, sub-second-to-seconds gaps; the next response
   starts after the previous one's tools returned plus the model's latency (never under 1.1 s)
   plus, in interactive sessions, the person's think time at the end of a turn;
5. **calendar** (:mod:`.timing`) — main sessions at a Japan-based person's working hours on
   their day; subagents a few seconds after a ``Task``/``Agent`` call of their parent; nothing
   crosses a split boundary; a client upgrade in the test window renames ``Task``→``Agent``,
   ``BashOutput``→``TaskOutput``, ``KillShell``→``TaskStop`` and loads MCP tools lazily through
   ``ToolSearch`` (the study's "tools absent in August");
6. **the retry loop** (:mod:`.sequence`) — one subagent in the test window (2026-09-07 08:00 UTC
   by default) gets "Concurrent subagent limit reached. Do not retry." from ``Agent`` and calls
   it again 32 times: same input, failed, one response each, seconds apart.

The rows are an Arrow table of the calls schema (:mod:`.table`); which split each stream falls
in is :mod:`.splits`.
"""

from __future__ import annotations

from datetime import date
from typing import Any

import numpy as np
import pyarrow as pa

from toolwatch import study
from toolwatch.collector.sources.simulator.config import (
    REFUSAL_TEXT,
    SimulationConfig,
    as_date,
    day_us,
)
from toolwatch.collector.sources.simulator.plan import (
    plan_coverage,
    plan_mcp,
    plan_sessions,
    split_windows,
)
from toolwatch.collector.sources.simulator.sequence import (
    insert_retry_loop,
    retry_loop_rows,
    sequence_calls,
)
from toolwatch.collector.sources.simulator.shapes import call_shapes
from toolwatch.collector.sources.simulator.table import calls_table
from toolwatch.collector.sources.simulator.timing import call_offsets, session_starts
from toolwatch.record import result_size


def simulate(
    seed: int = 0,
    sessions: int = int(study.CORPUS["sessions"]),
    start: date | str = study.CORPUS_START,
    days: int = int(study.CORPUS["days"]),
    *,
    scale: float | None = None,
    runaway_retries: int = 32,
) -> pa.Table:
    """A simulated corpus: an Arrow table with ``CALLS_SCHEMA``, each stream's rows together.

    ``scale`` (if given) replaces ``sessions`` with ``round(422 * scale)``.
    """
    options: dict[str, Any] = {
        "seed": seed,
        "start": as_date(start).isoformat(),
        "days": days,
        "runaway_retries": runaway_retries,
    }
    if scale is not None:
        return generate(SimulationConfig.scaled(scale, **options))
    return generate(SimulationConfig(sessions=sessions, **options))


def generate(config: SimulationConfig) -> pa.Table:
    """Build the corpus described by ``config`` (the steps are in the module docstring)."""
    root = np.random.SeedSequence(config.seed)
    plan_seq, session_seq, shape_seq, time_seq = root.spawn(4)
    rng = np.random.default_rng(plan_seq)
    start = as_date(config.start)
    windows = split_windows(start, config.days)
    plans = plan_sessions(config, windows, rng)
    plan_mcp(plans, config.sessions / study.CORPUS["sessions"], rng)
    plan_coverage(plans, rng)

    seqs = [
        sequence_calls(p, np.random.default_rng(s))
        for p, s in zip(plans, session_seq.spawn(len(plans)), strict=True)
    ]
    for p, s in zip(plans, seqs, strict=True):
        if p.runaway:
            insert_retry_loop(p, s, config.runaway_retries)

    lengths = np.array([len(s.tools) for s in seqs], dtype=np.int64)
    total = int(lengths.sum())
    tool = np.fromiter((t for s in seqs for t in s.tools), dtype=np.int64, count=total)
    new_resp = np.fromiter((b for s in seqs for b in s.new_response), dtype=bool, count=total)
    failed = np.fromiter((b for s in seqs for b in s.failed), dtype=bool, count=total)
    session_of = np.repeat(np.arange(len(plans)), lengths)

    shape_rng = np.random.default_rng(shape_seq)
    input_bytes, output_bytes, duration = call_shapes(tool, failed, session_of, plans, shape_rng)
    loop_rows = retry_loop_rows(plans, lengths)
    if len(loop_rows):  # the same call, refused at once with the same text
        input_bytes[loop_rows] = input_bytes[loop_rows[0]]
        output_bytes[loop_rows] = result_size(REFUSAL_TEXT)
        duration[loop_rows] = shape_rng.uniform(0.004, 0.03, len(loop_rows))

    time_rng = np.random.default_rng(time_seq)
    offsets_ms = call_offsets(
        new_resp, duration, input_bytes, session_of, plans, loop_rows, time_rng
    )
    starts_us = session_starts(plans, seqs, offsets_ms, lengths, windows, time_rng)
    start_us = day_us(start) + np.repeat(starts_us, lengths) + offsets_ms * 1000
    return calls_table(
        config, plans, lengths, tool, new_resp, failed, input_bytes, output_bytes, duration,
        start_us,
    )  # fmt: skip
