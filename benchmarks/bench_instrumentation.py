"""Instrumentation overhead per tool call vs bare ``call_tool``, over in-memory transports.

Run: ``.venv/bin/python benchmarks/bench_instrumentation.py [--calls N] [--rounds R] [--stdio]
[--no-fail]``

All variants run in the same process against the same real ``MCPServer`` and client, in
rotating rounds (bare, instrumented, SDK span only, ...) so that drift on a shared machine hits
all of them; µs/call is the median over rounds, the ratio the median of per-round ratios. The
instrumented variant uses a real SDK tracer provider with a ``BatchSpanProcessor`` whose
exporter only counts spans (the network is not what is measured). "SDK span only" is the
reference floor: a plain current SDK span with as many attributes, no toolwatch code; "vs SDK
span" is instrumented / that floor, i.e. what toolwatch's own code adds to the span it has to
make anyway.
Transports: ``legacy`` (JSON-RPC framing over in-memory streams) and ``direct`` (mcp 2.3's
default in-process dispatch, no framing — the cheapest bare call, so the hardest ratio);
``--stdio`` adds the deployment case, a server subprocess over stdio (this file with
``--serve``). Target: overhead ≤ 15 % on every transport measured; exits 1 when one misses it
(``--no-fail``: report only) or when a span was lost. The in-memory transports miss it: a plain
SDK span alone costs more (``docs/ARCHITECTURE.md``, *Overhead*).
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import statistics
import sys
import time
from collections.abc import Sequence
from importlib.metadata import version
from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters
from mcp.server.mcpserver import MCPServer
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.trace import SpanKind, Tracer

from toolwatch.instrumentation import instrument, model_response, uninstrument
from toolwatch.usage import positive_int
from toolwatch.words import counted

sys.path.insert(0, str(Path(__file__).resolve().parent))  # targets: the shared convention
from targets import Targets, add_no_fail, command_line

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


#: The reference variant: a plain SDK span with as many attributes as ours, made current
#: around the bare call — the floor any OTel client span costs, toolwatch or not.
FLOOR_ATTRIBUTES = {f"bench.attribute.{i}": (i if i % 2 else f"v{i}") for i in range(11)}
VARIANTS = ("bare", "traced", "floor")


async def timed_block(client: Client, calls: int, floor: Tracer | None) -> tuple[float, float]:
    """(wall, CPU) seconds per call over ``calls`` sequential calls."""
    wall, cpu = time.perf_counter(), time.process_time()
    for i in range(calls):
        with model_response(f"msg_{i // 4}", conversation_id="bench"):
            if floor is None:
                await client.call_tool("read", ARGUMENTS)
            else:
                with floor.start_as_current_span(
                    "tools/call read", kind=SpanKind.CLIENT, attributes=FLOOR_ATTRIBUTES
                ):
                    await client.call_tool("read", ARGUMENTS)
    return (time.perf_counter() - wall) / calls, (time.process_time() - cpu) / calls


def target(transport: str) -> tuple[MCPServer | StdioServerParameters, str]:
    """(server argument of ``Client``, its mode) for a transport label."""
    if transport == "stdio":
        return StdioServerParameters(command=sys.executable, args=[__file__, "--serve"]), "auto"
    return build_server(), "legacy" if transport == "legacy" else "auto"


async def measure(
    transport: str, calls: int, rounds: int, provider: TracerProvider
) -> dict[str, list[float]]:
    """Rounds of all variants; the order rotates every round so that drift cancels out."""
    out: dict[str, list[float]] = {f"{v}{k}": [] for v in VARIANTS for k in ("", "_cpu")}
    floor_tracer = provider.get_tracer("bench-floor")

    async def run(variant: str) -> None:
        if variant == "traced":
            instrument(tracer_provider=provider)
        floor = floor_tracer if variant == "floor" else None
        wall, cpu = await timed_block(client, calls, floor)
        if variant == "traced":
            uninstrument()
        out[variant].append(wall)
        out[variant + "_cpu"].append(cpu)

    server, mode = target(transport)
    async with Client(server, mode=mode) as client:
        await client.list_tools()
        for variant in VARIANTS:  # warm-up, not kept
            await run(variant)
        for k in out:
            out[k].clear()
        for r in range(rounds):
            for i in range(len(VARIANTS)):
                await run(VARIANTS[(r + i) % len(VARIANTS)])
    return out


async def count_work(transport: str, calls: int, provider: TracerProvider) -> dict[str, float]:
    """Python function calls per tool call for each variant: a load-independent work measure."""
    floor_tracer = provider.get_tracer("bench-floor")
    counts: dict[str, float] = {}
    server, mode = target(transport)
    async with Client(server, mode=mode) as client:
        await client.list_tools()
        for variant in VARIANTS:
            if variant == "traced":
                instrument(tracer_provider=provider)
            floor = floor_tracer if variant == "floor" else None
            await timed_block(client, 10, floor)  # warm caches
            profiler = cProfile.Profile()
            profiler.enable()
            await timed_block(client, calls, floor)
            profiler.disable()
            if variant == "traced":
                uninstrument()
            stats = pstats.Stats(profiler)
            counts[variant] = stats.total_calls / calls  # type: ignore[attr-defined]
    return counts


def paired_ratio(
    m: dict[str, list[float]], variant: str, cpu: bool = False, over: str = "bare"
) -> float:
    """Median over rounds of ``variant`` / ``over`` (both measured in the same round)."""
    suffix = "_cpu" if cpu else ""
    pairs = zip(m[variant + suffix], m[over + suffix], strict=True)
    return statistics.median(t / b for t, b in pairs)


def main(argv: Sequence[str] | None = None) -> int:
    parser = command_line(__doc__)
    parser.add_argument(
        "--calls", type=positive_int, default=40, help="calls per round (default 40)"
    )
    parser.add_argument("--rounds", type=positive_int, default=12, help="rounds (default 12)")
    parser.add_argument("--stdio", action="store_true", help="also measure over stdio")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    add_no_fail(parser)
    args = parser.parse_args(argv)
    if args.serve:  # the stdio server subprocess
        build_server().run("stdio")
        return 0

    exporter = CountingExporter()
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(exporter))
    print(
        f"mcp {version('mcp')}, opentelemetry-sdk {version('opentelemetry-sdk')}, "
        f"python {sys.version.split()[0]}; {counted(args.rounds, 'round')} x "
        f"{counted(args.calls, 'call')}; "
        "medians over rounds"
    )
    print(
        f"{'transport':<10}{'bare µs/call':>14}{'instrumented':>14}{'overhead':>12}"
        f"{'ratio':>8}{'CPU ratio':>11}{'SDK span only':>15}{'vs SDK span':>13}"
    )
    floor_worst = 0.0
    targets = Targets()
    transports = ["legacy", "direct"] + (["stdio"] if args.stdio else [])
    for label in transports:
        m = anyio.run(measure, label, args.calls, args.rounds, provider)
        bare, traced = statistics.median(m["bare"]), statistics.median(m["traced"])
        ratio = paired_ratio(m, "traced")
        targets.check(f"overhead, {label}", (ratio - 1) * 100, "<=", TARGET_OVERHEAD * 100, " %")
        floor_worst = max(floor_worst, paired_ratio(m, "floor") - 1)
        print(
            f"{label:<10}{bare * 1e6:>14.1f}{traced * 1e6:>14.1f}"
            f"{(traced - bare) * 1e6:>+10.1f}µs{ratio:>8.3f}"
            f"{paired_ratio(m, 'traced', cpu=True):>11.3f}{paired_ratio(m, 'floor'):>15.3f}"
            f"{paired_ratio(m, 'traced', over='floor'):>13.3f}"
        )
    print(
        "Python function calls per tool call (deterministic, unaffected by machine load; "
        "stdio: client process only):"
    )
    print(
        f"{'transport':<10}{'bare':>10}{'instrumented':>14}{'ratio':>8}{'SDK span only':>15}"
        f"{'vs SDK span':>13}"
    )
    for label in transports:
        c = anyio.run(count_work, label, 100, provider)
        print(
            f"{label:<10}{c['bare']:>10.0f}{c['traced']:>14.0f}"
            f"{c['traced'] / c['bare']:>8.3f}{c['floor'] / c['bare']:>15.3f}"
            f"{c['traced'] / c['floor']:>13.3f}"
        )
    provider.shutdown()
    # traced + floor spans: timed rounds, their warm-up, and the call-counting runs
    expected_spans = 2 * len(transports) * ((args.rounds + 1) * args.calls + 110)
    print(
        f"spans exported: {exporter.count} (expected {expected_spans}); overhead = median paired "
        f"ratio - 1; a plain SDK span alone costs up to {floor_worst:+.1%}"
    )
    print(targets.report())
    if exporter.count != expected_spans:
        print("spans lost: the instrumented calls did not all export one span", file=sys.stderr)
        return 1
    return targets.exit_code(args.no_fail)


if __name__ == "__main__":
    sys.exit(main())
