"""Benchmark: Claude Code transcript import throughput (MB/s of transcript).

Generates a large synthetic transcript tree (2.1.x layout: session files plus subagent files;
the line mix, block-per-line responses, envelopes and lognormal result sizes of real sessions)
in a temporary directory, then measures in the same run:

* baseline: read each file and ``json.loads`` every line, nothing else;
* parse: :func:`import_transcripts` (parse, measure, deduplicate, build records), with argument
  provenance (the default: a second pass reading every result and argument) and without it
  (``import --no-provenance``);
* end to end: ``toolwatch import claude-code`` into a fresh store (parse + Parquet write).

Each is printed in MB/s and as a ratio to the baseline. No target is set: the figures are for
comparing runs (``docs/ARCHITECTURE.md``, *Importer*).

``--tiny N`` measures instead a folder of N tiny sessions (one call and its result each), where
the per-stream set-up dominates: ms per session with provenance (windows made at a stream's
first result), with every window made up front as before that change (the before), and
without provenance; the before/after ratio is printed.

Run: ``.venv/bin/python benchmarks/bench_import.py [--mb 120] [--seed 7] [--tiny 10000]``.
"""

from __future__ import annotations

import json
import random
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from toolwatch.cli import main as cli_main
from toolwatch.collector.sources.claude_code import import_transcripts
from toolwatch.instrumentation.provenance import DEFAULT_CONFIG
from toolwatch.usage import non_negative_int, positive_float, positive_int
from toolwatch.words import counted

sys.path.insert(0, str(Path(__file__).resolve().parent))  # targets: the shared convention
from targets import command_line

TOOLS = ["Bash", "Read", "Edit", "Grep", "Glob", "Write", "TodoWrite", "WebFetch"]
MCP_TOOLS = ["mcp__github__create_pull_request", "mcp__plugin_playwright_playwright__browser_click"]
WORDS = "the of and to a in is it that for on with as was at by an be this from or are".split()  # noqa: SIM905


_CORPUS: list[str] = []


def _text(rng: random.Random, n_bytes: int) -> str:
    """``n_bytes`` of prose-like ASCII, sliced from one pre-built text (generation stays fast)."""
    if not _CORPUS:
        words = rng.choices(WORDS, k=250_000)
        _CORPUS.append(" ".join(words))
    text = _CORPUS[0]
    while len(text) < n_bytes:
        text += " " + text
    start = rng.randrange(0, max(1, len(text) - n_bytes))
    return text[start : start + n_bytes]


def _envelope(
    kind: str, session: str, parent: str | None, when: datetime, agent: str | None
) -> dict[str, Any]:
    line: dict[str, Any] = {
        "parentUuid": parent,
        "isSidechain": agent is not None,
        "userType": "external",
        "cwd": "/home/user/projects/example-app",
        "sessionId": session,
        "version": "2.1.3",
        "gitBranch": "main",
        "type": kind,
        "uuid": str(uuid.UUID(int=random.getrandbits(128))),
        "timestamp": when.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
    }
    if agent is not None:
        line["agentId"] = agent
    return line


def _session_lines(
    rng: random.Random, session: str, start: datetime, agent: str | None, responses: int
) -> list[str]:
    lines: list[str] = []
    now = start
    parent: str | None = None
    first = _envelope("user", session, None, now, agent)
    first["message"] = {"role": "user", "content": _text(rng, 200)}
    lines.append(json.dumps(first))
    parent = first["uuid"]
    for r in range(responses):
        now += timedelta(seconds=rng.lognormvariate(2.4, 0.8))
        msg_id = f"msg_{session[:8]}{agent or ''}{r:05d}"
        request = f"req_{msg_id}"
        n_tools = 1 if rng.random() < 0.89 else rng.randint(2, 4)
        blocks: list[dict[str, Any]] = [{"type": "thinking", "thinking": _text(rng, 800)}]
        if rng.random() < 0.5:
            blocks.append({"type": "text", "text": _text(rng, 300)})
        calls = []
        for k in range(n_tools):
            tool = rng.choice(MCP_TOOLS) if rng.random() < 0.07 else rng.choice(TOOLS)
            call_id = f"toolu_{msg_id}_{k}"
            calls.append(call_id)
            size = int(rng.lognormvariate(5.0, 0.7))
            blocks.append(
                {
                    "type": "tool_use",
                    "id": call_id,
                    "name": tool,
                    "input": {"arg": _text(rng, size)},
                }
            )
        for b in blocks:
            now += timedelta(milliseconds=rng.randint(50, 1500))
            line = _envelope("assistant", session, parent, now, agent)
            line["requestId"] = request
            line["message"] = {
                "model": "claude-opus-4",
                "id": msg_id,
                "type": "message",
                "role": "assistant",
                "content": [b],
                "stop_reason": None,
                "usage": {"input_tokens": 4, "output_tokens": 120, "cache_read_input_tokens": 9000},
            }
            lines.append(json.dumps(line))
            parent = line["uuid"]
        for call_id in calls:
            now += timedelta(milliseconds=rng.randint(20, 4000))
            size = min(int(rng.lognormvariate(5.7, 1.6)), 200_000)
            line = _envelope("user", session, parent, now, agent)
            result: dict[str, Any] = {
                "type": "tool_result",
                "tool_use_id": call_id,
                "content": _text(rng, size),
            }
            if rng.random() < 0.09:
                result["is_error"] = True
            line["message"] = {"role": "user", "content": [result]}
            line["toolUseResult"] = {"stdout": "", "stderr": "", "interrupted": False}
            lines.append(json.dumps(line))
            parent = line["uuid"]
        if rng.random() < 0.1:
            lines.append(
                json.dumps(
                    {
                        "type": "file-history-snapshot",
                        "messageId": str(uuid.uuid4()),
                        "snapshot": {"trackedFileBackups": {}, "timestamp": now.isoformat()},
                    }
                )
            )
    return lines


def generate(root: Path, target_mb: float, seed: int) -> int:
    """Write session + subagent files until ``target_mb`` is reached; returns bytes written."""
    rng = random.Random(seed)
    random.seed(seed)
    written = 0
    start = datetime(2026, 8, 4, 9, tzinfo=UTC)
    project = root / "-home-user-projects-example-app"
    project.mkdir(parents=True)
    s = 0
    while written < target_mb * 1e6:
        session = str(uuid.UUID(int=rng.getrandbits(128)))
        when = start + timedelta(hours=6 * s)
        files = {project / f"{session}.jsonl": _session_lines(rng, session, when, None, 60)}
        if s % 3 == 0:
            agent = f"a{rng.getrandbits(32):08x}"
            path = project / session / "subagents" / f"agent-{agent}.jsonl"
            files[path] = _session_lines(rng, session, when + timedelta(minutes=5), agent, 20)
        for path, lines in files.items():
            path.parent.mkdir(parents=True, exist_ok=True)
            data = ("\n".join(lines) + "\n").encode()
            path.write_bytes(data)
            written += len(data)
        s += 1
    return written


def baseline(files: list[Path]) -> None:
    loads = json.loads
    for path in files:
        with path.open("rb") as fh:
            for line in fh:
                loads(line)


def tiny_sessions(root: Path, n: int) -> None:
    """``n`` session files of one call and its result each."""
    root.mkdir(parents=True)
    for i in range(n):
        session = f"tiny-{i:06d}"
        when = datetime(2026, 8, 4, 9, tzinfo=UTC) + timedelta(minutes=i)
        call = _envelope("assistant", session, None, when, None)
        call["message"] = {
            "id": f"msg_{i}",
            "role": "assistant",
            "content": [{"type": "tool_use", "id": f"toolu_{i}", "name": "Bash", "input": {}}],
        }
        result = _envelope("user", session, call["uuid"], when + timedelta(seconds=1), None)
        block = {"type": "tool_result", "tool_use_id": f"toolu_{i}", "content": "ok"}
        result["message"] = {"role": "user", "content": [block]}
        (root / f"{session}.jsonl").write_text(json.dumps(call) + "\n" + json.dumps(result) + "\n")


def run_tiny(n: int) -> int:
    """The ``--tiny`` figures (see the module docs)."""
    from toolwatch.instrumentation.provenance.window import FingerprintWindow

    init = FingerprintWindow.__init__

    def made_up_front(self: FingerprintWindow, config: Any) -> None:
        init(self, config)
        self._allocate()  # as before windows were made at their first result

    with tempfile.TemporaryDirectory(prefix="toolwatch-bench-import-") as tmp:
        root = Path(tmp) / "tiny"
        tiny_sessions(root, n)
        timings: dict[str, float] = {}
        for label, provenance, eager in (
            ("provenance (windows at first result)", True, False),
            ("provenance, windows made up front", True, True),
            ("--no-provenance", False, False),
        ):
            setattr(FingerprintWindow, "__init__", made_up_front if eager else init)  # noqa: B010
            try:
                c0 = time.process_time()
                import_transcripts([root], provenance=DEFAULT_CONFIG if provenance else None)
                timings[label] = time.process_time() - c0
            finally:
                setattr(FingerprintWindow, "__init__", init)  # noqa: B010
            print(f"{label:38}  {timings[label] / n * 1e3:7.3f} ms/session CPU")
        after = timings["provenance (windows at first result)"]
        before = timings["provenance, windows made up front"]
        print(f"{counted(n, 'tiny session')}: before/after {before / after:.1f}x (CPU, same run)")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = command_line(__doc__)
    parser.add_argument(
        "--mb", type=positive_float, default=120.0, help="transcript size to generate"
    )
    parser.add_argument("--seed", type=non_negative_int, default=7)
    parser.add_argument(
        "--tiny",
        type=positive_int,
        metavar="N",
        help="measure N tiny sessions instead (per-stream set-up, before/after ratio)",
    )
    args = parser.parse_args(argv)
    if args.tiny is not None:
        return run_tiny(args.tiny)
    with tempfile.TemporaryDirectory(prefix="toolwatch-bench-import-") as tmp:
        root = Path(tmp) / "projects"
        t0 = time.perf_counter()
        size = generate(root, args.mb, args.seed)
        files = sorted(root.rglob("*.jsonl"))
        mb = size / 1e6
        print(
            f"generated {mb:.1f} MB in {counted(len(files), 'file')} "
            f"({time.perf_counter() - t0:.1f} s)"
        )

        t0, c0 = time.perf_counter(), time.process_time()
        baseline(files)
        t_base, c_base = time.perf_counter() - t0, time.process_time() - c0

        t0, c0 = time.perf_counter(), time.process_time()
        report = import_transcripts([root])[1]  # the records are not kept alive meanwhile
        t_parse, c_parse = time.perf_counter() - t0, time.process_time() - c0

        t0, c0 = time.perf_counter(), time.process_time()
        import_transcripts([root], provenance=None)
        t_bare, c_bare = time.perf_counter() - t0, time.process_time() - c0

        t0, c0 = time.perf_counter(), time.process_time()
        code = cli_main(
            ["import", "claude-code", str(root), "--store", str(Path(tmp) / "store"), "--quiet"]
        )
        t_e2e, c_e2e = time.perf_counter() - t0, time.process_time() - c0
        if code != 0:
            print(f"import failed with exit code {code}", file=sys.stderr)
            return code

        print(f"calls: {report.calls:,} in {counted(report.sessions, 'session')}")
        print(f"{'':33}  {'wall MB/s':>10}  {'CPU MB/s':>10}  {'CPU ratio':>9}  (wall s)")
        for label, wall, cpu in (
            ("baseline json.loads per line", t_base, c_base),
            ("importer parse + records", t_parse, c_parse),
            ("  the same, --no-provenance", t_bare, c_bare),
            ("toolwatch import (to store)", t_e2e, c_e2e),
        ):
            ratio = c_base / cpu
            print(f"{label:33}  {mb / wall:10.1f}  {mb / cpu:10.1f}  {ratio:8.2f}x  ({wall:.2f})")
        print("CPU ratio: speed / baseline speed, both in CPU time of this process")
        print("wall < CPU means other processes shared the cores during the run")
    return 0


if __name__ == "__main__":
    sys.exit(main())
