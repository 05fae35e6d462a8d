"""Instrumentation overhead per tool call vs bare ``call_tool``, over in-memory transports.

Run: ``.venv/bin/python benchmarks/bench_instrumentation.py [--calls N] [--rounds R]``

Both variants run in the same process against the same real ``MCPServer`` and client, in
alternating rounds (bare, instrumented, bare, ...) so drift on a shared machine hits both; the
figure per variant is the median over rounds. The instrumented variant uses a real SDK tracer
provider with a ``BatchSpanProcessor`` whose exporter only counts spans (the network is not
what is measured). Two transports: ``legacy`` (JSON-RPC framing over in-memory streams) and
``direct`` (mcp 2.3's default in-process dispatch, no framing — the cheapest bare call, so the
hardest ratio). Target: overhead ≤ 15 %.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Sequence
from importlib.metadata import version

import anyio
from mcp import Client
from mcp.server.mcpserver import MCPServer
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from toolwatch.instrumentation import instrument, model_response, uninstrument

TARGET_OVERHEAD = 0.15
ARGUMENTS = {"path": "/srv/data/report-2026.csv", "limit": 100, "fields": ["a", "b", "c"]}
RESULT_TEXT = "x" * 2_000


class CountingExporter(SpanExporter):
    def __init__(self) -> None:
        self.count = 0

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.count += len(spans)
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        pass


def build_server() -> MCPServer:
    server = MCPServer("bench")

    @server.tool()
    def read(path: str, limit: int, fields: list[str]) -> str:
        return RESULT_TEXT

    return server


async def timed_block(client: Client, calls: int) -> tuple[float, float]:
    """(wall, CPU) seconds per call over ``calls`` sequential calls."""
    wall, cpu = time.perf_counter(), time.process_time()
    for i in range(calls):
        with model_response(f"msg_{i // 4}", conversation_id="bench"):
            await client.call_tool("read", ARGUMENTS)
    return (time.perf_counter() - wall) / calls, (time.process_time() - cpu) / calls


async def measure(
    mode: str, calls: int, rounds: int, provider: TracerProvider
) -> dict[str, list[float]]:
    """Paired rounds; the order within a pair alternates so that drift cancels out."""
    out: dict[str, list[float]] = {k: [] for k in ("bare", "traced", "bare_cpu", "traced_cpu")}

    async def run(traced: bool) -> None:
        if traced:
            instrument(tracer_provider=provider)
        wall, cpu = await timed_block(client, calls)
        if traced:
            uninstrument()
        key = "traced" if traced else "bare"
        out[key].append(wall)
        out[key + "_cpu"].append(cpu)

    async with Client(build_server(), mode=mode) as client:
        await client.list_tools()
        for traced in (False, True, False, True):  # warm-up, not kept
            await run(traced)
        for k in out:
            out[k].clear()
        for r in range(rounds):
            for traced in (False, True) if r % 2 == 0 else (True, False):
                await run(traced)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=50, help="calls per round (default 50)")
    parser.add_argument("--rounds", type=int, default=20, help="paired rounds (default 20)")
    args = parser.parse_args(argv)

    exporter = CountingExporter()
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(exporter))
    print(
        f"mcp {version('mcp')}, opentelemetry-sdk {version('opentelemetry-sdk')}, "
        f"python {sys.version.split()[0]}; {args.rounds} paired rounds x {args.calls} calls; "
        "medians over rounds"
    )
    print(
        f"{'transport':<10}{'bare µs/call':>14}{'instrumented':>14}{'overhead':>12}"
        f"{'ratio':>8}{'CPU ratio':>11}"
    )
    worst = 0.0
    for mode, label in (("legacy", "legacy"), ("auto", "direct")):
        m = anyio.run(measure, mode, args.calls, args.rounds, provider)
        bare, traced = statistics.median(m["bare"]), statistics.median(m["traced"])
        ratio = statistics.median(t / b for t, b in zip(m["traced"], m["bare"], strict=True))
        cpu_ratio = statistics.median(
            t / b for t, b in zip(m["traced_cpu"], m["bare_cpu"], strict=True)
        )
        worst = max(worst, ratio - 1)
        print(
            f"{label:<10}{bare * 1e6:>14.1f}{traced * 1e6:>14.1f}"
            f"{(traced - bare) * 1e6:>+10.1f}µs{ratio:>8.3f}{cpu_ratio:>11.3f}"
        )
    provider.shutdown()
    expected_spans = 2 * (args.rounds + 2) * args.calls
    verdict = "met" if worst <= TARGET_OVERHEAD else "NOT met"
    print(
        f"spans exported: {exporter.count} (expected {expected_spans}); "
        f"worst overhead {worst:+.1%} (median paired ratio), target ≤ {TARGET_OVERHEAD:.0%}: "
        f"{verdict}"
    )
    return 0 if exporter.count == expected_spans else 1


if __name__ == "__main__":
    sys.exit(main())
