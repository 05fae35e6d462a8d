"""Provenance cost: µs per KB of result and of arguments, as ratios to the bare instrumented call
measured in the same run, and memory per conversation.

Run: ``.venv/bin/python benchmarks/bench_provenance.py [--rounds R] [--calls N]``

Two parts, one process:

1. **Instrumented calls** over a real in-memory MCP client/server, in rotating rounds: the call
   instrumented with provenance off (the baseline: what toolwatch costs today), and on. A
   ``read`` tool returns a result of 1, 16 or 128 KB (ingested into the window), then a
   ``http_post`` sends 0.5 KB or 4 KB of arguments, half of them copied from the result (checked:
   this is an egress call). Reported: µs per call with and without provenance, their ratio, and
   the extra µs per KB of result / argument. CPU time, medians over rounds.
2. **The measure alone** (no MCP): ingest µs/KB (copy + the lazy hashing a check triggers) and
   check µs/KB of arguments on synthetic code-and-prose text (seed 13), beside the size
   computation the instrumentation already does for every call, in the same run; then memory of
   one conversation filled past its bound (``tracemalloc``) and of the compact profile.

Absolute times move with machine load; the ratios are what to compare.
"""

from __future__ import annotations

import random
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import anyio
from mcp import Client
from mcp.server.mcpserver import MCPServer
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from toolwatch.instrumentation import instrument, model_response, uninstrument
from toolwatch.instrumentation.provenance import (
    COMPACT_CONFIG,
    DEFAULT_CONFIG,
    ProvenanceTracker,
    StreamProvenance,
)
from toolwatch.record import arguments_size, result_size
from toolwatch.usage import positive_int
from toolwatch.words import counted

sys.path.insert(0, str(Path(__file__).resolve().parent))  # targets: the shared convention
from targets import command_line

_VOCABULARY = (
    "the of and to in is for that with on as are this be by from or at an it not which def "
    "return self import class if else while None True False async await yield config value "
    "error file path user data request response status update create install server client "
    "token session result content"
)
WORDS = tuple(_VOCABULARY.split(" "))
RESULT_KB = (1, 16, 128)
ARGUMENT_KB = (0.5, 4)


def text(rnd: random.Random, size: int) -> str:
    """Code-and-prose-like text (lines of words, identifiers, numbers, indentation)."""
    out, n = [], 0
    while n < size:
        words = [
            rnd.choice(WORDS)
            if rnd.random() < 0.8
            else f"{rnd.choice(WORDS)}_{rnd.randrange(1000)}"
            for _ in range(rnd.randrange(3, 14))
        ]
        line = "    " * rnd.randrange(0, 3) + " ".join(words) + "\n"
        out.append(line)
        n += len(line)
    return "".join(out)[:size]


def cpu(fn: Callable[[], Any], reps: int, batches: int = 5) -> float:
    """Median CPU seconds of one call over ``batches`` batches of ``reps`` calls."""
    samples = []
    for _ in range(batches):
        t = time.process_time()
        for _ in range(reps):
            fn()
        samples.append((time.process_time() - t) / reps)
    return statistics.median(samples)


# ------------------------------------------------------------------- 1. instrumented calls


def server(result: str) -> MCPServer:
    s = MCPServer("bench")

    @s.tool()
    def read(path: str) -> str:
        return result

    @s.tool()
    def http_post(url: str, body: str) -> str:
        return "202"

    return s


async def rounds(
    result: str, body: str | None, calls: int, n_rounds: int, provider: TracerProvider
) -> dict[str, list[float]]:
    """CPU seconds per call, per round, provenance off and on: ``read`` calls (their result is
    ingested) when ``body`` is None, else ``http_post`` calls after one read (their arguments,
    half copied from the result, are checked)."""
    out: dict[str, list[float]] = {"off": [], "on": []}
    async with Client(server(result)) as client:

        async def block(variant: str) -> float:
            instrument(tracer_provider=provider, provenance=variant == "on")
            with model_response("m-read", conversation_id="bench"):
                await client.call_tool("read", {"path": "/srv/file.txt"})
            start = time.process_time()
            for i in range(calls):
                with model_response(f"m{i}", conversation_id="bench"):
                    if body is None:
                        await client.call_tool("read", {"path": "/srv/file.txt"})
                    else:
                        args = {"url": "https://c.example.net/in", "body": body}
                        await client.call_tool("http_post", args)
            spent = (time.process_time() - start) / calls
            uninstrument()
            return spent

        await block("off")
        await block("on")  # warm-up
        for r in range(n_rounds):
            for variant in ("off", "on") if r % 2 == 0 else ("on", "off"):
                out[variant].append(await block(variant))
    return out


def _row(label: str, kb: float, m: dict[str, list[float]]) -> str:
    off, on = statistics.median(m["off"]), statistics.median(m["on"])
    ratio = statistics.median(b / a for a, b in zip(m["off"], m["on"], strict=True))
    return (
        f"{label:<24} | {off * 1e6:>9.0f} {on * 1e6:>9.0f} {ratio:>7.2f} | "
        f"{(on - off) * 1e6 / kb:>10.1f}"
    )


def part_calls(n_rounds: int, calls: int) -> None:
    rnd = random.Random(13)
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(InMemorySpanExporter()))
    print("1. instrumented calls, CPU µs per call, provenance off (the bare instrumented call)")
    print("   and on, in alternating rounds (medians; ratio = median of per-round ratios)")
    print(f"{'call':<24} | {'off':>9} {'on':>9} {'ratio':>7} | {'+µs per KB':>10}")
    for kb in RESULT_KB:
        m = anyio.run(rounds, text(rnd, kb * 1024), None, calls, n_rounds, provider)
        print(_row(f"read, {kb} KB result", kb, m))
    result = text(rnd, 16 * 1024)
    for args_kb in ARGUMENT_KB:
        n = int(args_kb * 1024)
        body = result[: n // 2] + text(rnd, n - n // 2)  # half copied: a real payload
        m = anyio.run(rounds, result, body, calls, n_rounds, provider)
        print(_row(f"http_post, {args_kb} KB args", args_kb, m))
    provider.shutdown()


# --------------------------------------------------------------------- 2. the measure alone


def part_measure(reps: int) -> None:
    rnd = random.Random(13)
    history = [text(rnd, 4096) for _ in range(200)]  # ~800 KB of earlier results
    print(
        "\n2. the measure alone, CPU µs per KB (same run: the size computation the "
        "instrumentation does for every call)"
    )
    print(
        f"{'KB':>5} | {'ingest':>8} {'size':>7} {'ratio':>7} | {'check':>8} {'args size':>9} "
        f"{'ratio':>7} | payload found"
    )
    for kb in RESULT_KB:
        size = kb * 1024
        blocks = [{"type": "text", "text": text(rnd, size)}]
        n = max(2, reps * 16 // kb)

        ingesting, stream = StreamProvenance(), StreamProvenance()
        for h in history:
            ingesting.add_result("read", "bench", h)
            stream.add_result("read", "bench", h)

        def ingest(into: StreamProvenance = ingesting, content: Any = blocks) -> None:
            into.add_result("read", "bench", content)
            into.window.prepare()  # the hashing a later check triggers, counted here

        t_ingest = cpu(ingest, n)
        t_size = cpu(partial(result_size, blocks), n * 20)
        reused = history[17][: size // 2]
        args = {"url": "https://c.example.net/u", "body": reused + text(rnd, size // 2)}
        akb = arguments_size(args) / 1024
        t_check = cpu(partial(stream.check_call, "http_post", "bench", args), max(2, n // 4))
        t_asize = cpu(partial(arguments_size, args), n * 20)
        found = stream.check_call("http_post", "bench", args).payload_longest
        print(
            f"{kb:>5} | {t_ingest / kb * 1e6:>8.1f} {t_size / kb * 1e6:>7.2f} "
            f"{t_ingest / t_size:>7.0f} | {t_check / akb * 1e6:>8.1f} {t_asize / akb * 1e6:>9.2f} "
            f"{t_check / t_asize:>7.0f} | {found} of {len(reused.encode())} B"
        )


def memory() -> None:
    rnd = random.Random(13)
    history = [text(rnd, 4096) for _ in range(200)]
    print("\n3. memory of one conversation (tracemalloc), filled with 3 windows of results")
    for name, config in (("default", DEFAULT_CONFIG), ("compact", COMPACT_CONFIG)):
        tracemalloc.start()
        base = tracemalloc.get_traced_memory()[0]
        tracker = ProvenanceTracker(config, max_streams=1)
        for i in range(3 * config.window_bytes // 4096):
            rid = f"r{i // 3}"
            tracker.check_call(
                ("c", None), "http_post", "bench", {"body": history[i % 200][:300]}, rid
            )
            tracker.add_result(
                ("c", None), f"tool{i % 40}", "bench", history[i % 200], response_id=rid
            )
        current, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        mib = 2**20
        print(
            f"  {name:<8} traced {(current - base) / mib:5.2f} MiB, peak {(peak - base) / mib:5.2f}"
            f" MiB; bound {config.memory_bound / mib:5.2f} MiB per conversation (x "
            f"{counted(ProvenanceTracker().max_streams, 'stream')} by default: "
            f"{ProvenanceTracker(config).memory_bound / mib:.0f} MiB)"
        )


def main(argv: Sequence[str] | None = None) -> int:
    parser = command_line(__doc__)
    parser.add_argument(
        "--rounds", type=positive_int, default=6, help="rounds per variant (default 6)"
    )
    parser.add_argument(
        "--calls", type=positive_int, default=20, help="call pairs per round (default 20)"
    )
    parser.add_argument(
        "--reps", type=positive_int, default=20, help="measure repetitions (default 20)"
    )
    args = parser.parse_args(argv)
    print(f"python {sys.version.split()[0]}; provenance k=16 w=8, window 1 MiB; seed 13")
    part_calls(args.rounds, args.calls)
    part_measure(args.reps)
    memory()
    return 0


if __name__ == "__main__":
    sys.exit(main())
