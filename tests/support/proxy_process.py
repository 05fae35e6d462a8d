"""A ``toolwatch proxy`` in a child process in front of the fuzz upstream
(:mod:`support.proxy_fuzz_upstream`), for the fuzz that attacks it: start it over streamable
HTTP or stdio, sample its memory (and its upstreams'), stop it and read its log. Support code,
not collected.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path

UPSTREAM = Path(__file__).with_name("proxy_fuzz_upstream.py")
#: An upstream that notes its pid and lingers a minute after its client leaves (as a Node
#: server-everything with timers sometimes did): the SDK's close waits 2 s for it, then
#: SIGTERMs its group.
LINGERING = """
import os, time
from collections.abc import Iterator
from pathlib import Path
from mcp.server.mcpserver import MCPServer

Path(__file__).with_name("pids").joinpath(str(os.getpid())).touch()
server = MCPServer("lingering")


@server.tool()
def echo(text: str) -> str:
    return text


server.run("stdio")
time.sleep(60)
"""
_LISTENING = re.compile(r"fault proxy listening on (\S+)")


class ProxyProcess:
    """``toolwatch proxy --transport TRANSPORT --upstream-cmd "python UPSTREAM"``; over stdio
    its stdin and stdout are this object's pipes (``proc.stdin``, ``proc.stdout``)."""

    def __init__(
        self,
        tmp: Path,
        transport: str = "http",
        *,
        extra: Sequence[str] = (),
        start_timeout: float = 60,
        upstream: Path = UPSTREAM,
        verbose: bool = False,
        env: Mapping[str, str] | None = None,
    ) -> None:
        """``extra``: more ``toolwatch proxy`` arguments (``--max-upstream-sessions 8``);
        ``upstream``: the Python server script run as the upstream; ``verbose``: ``-v``
        (every logger at DEBUG, as a user debugging runs it); ``env``: the child's environment."""
        tmp.mkdir(parents=True, exist_ok=True)
        self.log = tmp / f"proxy-{transport}.log"
        self.url = ""
        cmd = [sys.executable, "-m", "toolwatch", *(["-v"] if verbose else []), "proxy"]
        cmd += ["--transport", transport, "--upstream-cmd", f"{sys.executable} {upstream}"]
        if transport == "http":
            cmd += ["--port", "0"]
        cmd += extra
        pipe = subprocess.PIPE if transport == "stdio" else subprocess.DEVNULL
        with open(self.log, "wb") as err:
            self.proc = subprocess.Popen(
                cmd, stdin=pipe, stdout=pipe, stderr=err, env=None if env is None else dict(env)
            )
        deadline = time.monotonic() + start_timeout
        while time.monotonic() < deadline:  # both transports log the upstream's era at start
            text = self.log.read_text(errors="replace")
            found = _LISTENING.search(text)
            if found or (transport == "stdio" and "upstream agreed to" in text):
                self.url = found.group(1) if found else ""
                return
            if self.proc.poll() is not None:
                break
            time.sleep(0.1)
        self.proc.kill()
        raise RuntimeError(self.log.read_text(errors="replace"))

    def tree(self) -> list[int]:
        """The proxy's pid and its descendants' (the upstream processes it started)."""
        found, todo = [], [self.proc.pid]
        while todo:
            pid = todo.pop()
            found.append(pid)
            try:
                for task in os.listdir(f"/proc/{pid}/task"):
                    children = Path(f"/proc/{pid}/task/{task}/children").read_text().split()
                    todo.extend(int(c) for c in children)
            except OSError:
                continue
        return found

    def memory_mib(self) -> dict[str, float]:
        """The proxy's RSS and peak RSS, and the RSS of its whole process tree (MiB)."""
        out = {"proxy_rss": 0.0, "proxy_peak": 0.0, "tree_rss": 0.0, "processes": 0.0}
        for pid in self.tree():
            fields = _status(pid)
            out["tree_rss"] += fields.get("VmRSS", 0) / 1024
            out["processes"] += 1
            if pid == self.proc.pid:
                out["proxy_rss"] = fields.get("VmRSS", 0) / 1024
                out["proxy_peak"] = fields.get("VmHWM", 0) / 1024
        return {k: round(v, 1) for k, v in out.items()}

    def stop(self, timeout: float = 60) -> str:
        """End the proxy (over stdio: close its stdin, as a client that leaves does; over
        HTTP: SIGTERM), wait for its exit (``proc.returncode``) and return its log."""
        if self.proc.poll() is None:
            if self.proc.stdin is not None:
                self.proc.stdin.close()
            else:
                self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        return self.log.read_text(errors="replace")


@contextmanager
def lingering_upstream(tmp: Path) -> Iterator[tuple[Path, Path]]:
    """The :data:`LINGERING` upstream script and the directory of its pids
    (:func:`noted_pids`); any still running at the end is killed (a failing test leaves them
    behind)."""
    script, pids = tmp / "lingering.py", tmp / "pids"
    script.write_text(LINGERING)
    pids.mkdir()
    try:
        yield script, pids
    finally:
        for pid in noted_pids(pids):
            with suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def noted_pids(pids: Path) -> list[int]:
    """The pids the :data:`LINGERING` upstreams noted in ``pids``."""
    return [int(p.name) for p in pids.iterdir()]


def alive(pid: int) -> bool:
    """Whether process ``pid`` runs (a zombie, dead but not yet reaped, does not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:  # gone since
        return False


def gone_within(pids: Sequence[int], seconds: float) -> bool:
    """Whether every process of ``pids`` has ended within ``seconds``."""
    deadline = time.monotonic() + seconds
    while any(alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not any(alive(pid) for pid in pids)


def _status(pid: int) -> dict[str, int]:
    try:
        lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    except OSError:
        return {}
    return {
        k: int(v.split()[0])
        for k, _, v in (line.partition(":") for line in lines)
        if k in ("VmRSS", "VmHWM") and v.strip()
    }
