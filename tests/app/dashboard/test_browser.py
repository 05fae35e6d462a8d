"""A real browser on the running dashboard: ``toolwatch app`` on loopback, headless Chromium.

Streamlit renders in the browser (the HTML it serves is an empty shell until its script has
talked to the server over a websocket), so ``--dump-dom`` with a virtual-time budget returns
before anything is drawn. The test therefore drives Chromium through the DevTools protocol:
navigate, poll the page until the script has finished and the detection table is there, check
its text against the store, and keep a screenshot under ``test-artifacts/``.

Needs Debian's ``chromium`` (``.ci/run`` installs it): skipped without it, except under
``CI=true`` where a missing browser is a failure.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from support.app import interval, rows
from support.paths import REPO
from toolwatch.app.commands.app import free_port
from toolwatch.injection.experiment.report import label

pytestmark = pytest.mark.browser

REPO = REPO
ARTIFACTS = REPO / "test-artifacts"
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--window-size=1400,2600",
)
PAGE_STATE = """(() => {
  const app = document.querySelector('[data-testid="stApp"]');
  const table = document.querySelector('[data-testid="stTable"]');
  const title = document.querySelector('h1');
  return JSON.stringify({
    state: app ? app.getAttribute('data-test-script-state') : null,
    title: title ? title.innerText : null,
    table: table ? table.innerText : null,
    errors: document.querySelectorAll('[data-testid="stException"]').length,
  });
})()"""


def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found:
        return found
    if os.environ.get("CI") == "true":
        pytest.fail("CI=true but chromium is not installed (.ci/run installs Debian's chromium)")
    pytest.skip("chromium is not installed (Debian: apt-get install chromium; .ci/run does it)")


@pytest.fixture(scope="module")
def running_app(
    tmp_path_factory: pytest.TempPathFactory, built: dict[str, Any]
) -> Iterator[dict[str, Any]]:
    browser = chromium()
    root = built["root"]
    port = free_port()
    log = (tmp_path_factory.mktemp("logs") / "app.log").open("w")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "toolwatch",
            "app",
            "--store",
            str(root),
            "--port",
            str(port),
            "--headless",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,  # its own process group: the app and its Streamlit child
    )
    try:
        _wait_healthy(port, proc)
        yield {"root": root, "port": port, "browser": browser}
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        log.close()


def _wait_healthy(port: int, proc: subprocess.Popen[bytes], timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    url = f"http://127.0.0.1:{port}/_stcore/health"
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"toolwatch app exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.status == 200 and r.read().strip() == b"ok":
                    return
        except OSError:
            pass
        time.sleep(0.3)
    raise AssertionError(f"{url} did not answer ok within {timeout:g} s")


class DevTools:
    """Just enough of the Chrome DevTools protocol: one page, commands by id."""

    def __init__(self, browser: str) -> None:
        from websockets.sync.client import connect

        self.profile = tempfile.mkdtemp(prefix="toolwatch-chromium-")
        self.proc = subprocess.Popen(
            [
                browser,
                *CHROMIUM_FLAGS,
                f"--user-data-dir={self.profile}",
                "--remote-debugging-port=0",
                "about:blank",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        port_file = Path(self.profile) / "DevToolsActivePort"
        deadline = time.monotonic() + 30
        while not (port_file.exists() and len(port_file.read_text().splitlines()) >= 2):
            if time.monotonic() > deadline or self.proc.poll() is not None:
                raise AssertionError("chromium did not open its DevTools port")
            time.sleep(0.1)
        port = int(port_file.read_text().splitlines()[0])
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10) as r:
            targets = json.load(r)
        page = next(t for t in targets if t["type"] == "page")
        self.stack = contextlib.ExitStack()
        self.ws = self.stack.enter_context(connect(page["webSocketDebuggerUrl"], max_size=2**28))
        self.next_id = 0

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        self.next_id += 1
        self.ws.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            message = json.loads(self.ws.recv(timeout=60))
            if message.get("id") == self.next_id:
                if "error" in message:
                    raise AssertionError(f"{method}: {message['error']}")
                return dict(message["result"])

    def evaluate(self, expression: str) -> Any:
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        return result["result"].get("value")

    def close(self) -> None:
        self.stack.close()
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        shutil.rmtree(self.profile, ignore_errors=True)


def _load(tools: DevTools, url: str, ready: str, timeout: float = 90) -> dict[str, Any]:
    """Navigate and poll until the script is idle and ``ready`` (a PAGE_STATE key) is set."""
    tools.call("Page.navigate", url=url)
    deadline = time.monotonic() + timeout
    state: dict[str, Any] = {}
    while time.monotonic() < deadline:
        state = json.loads(tools.evaluate(PAGE_STATE))
        if state["state"] == "notRunning" and state[ready]:
            break
        time.sleep(0.5)
    time.sleep(2)  # let the charts draw for the screenshot
    return state


def _screenshot(tools: DevTools, name: str) -> bytes:
    ARTIFACTS.mkdir(exist_ok=True)
    shot = base64.b64decode(tools.call("Page.captureScreenshot", format="png")["data"])
    (ARTIFACTS / f"app-{name}.png").write_bytes(shot)
    return shot


#: The other pages: (url path, title, text that shows the page drew real content).
OTHER_PAGES = (
    ("sessions", "Sessions", "Calls in stream"),
    ("live", "Live alerts", "Alerts per hour"),
    ("workbench", "Workbench", "Pass rate of faulted runs"),
    ("corpus", "Corpus", "within-response gaps"),
)


def test_detection_table_renders_in_a_real_browser(running_app: dict[str, Any]) -> None:
    root = running_app["root"]
    runaway = rows(
        root,
        "SELECT rate, ci_low, ci_high, detected, runs FROM experiments WHERE variant = "
        "'standard' AND kind = 'runaway_retry' AND cue_set = 'all' AND detector = 'cusum' "
        "AND threshold_mode = 'fa_target'",
    )[0]
    expected = interval(runaway["rate"], runaway["ci_low"], runaway["ci_high"])
    base = f"http://127.0.0.1:{running_app['port']}/"
    tools = DevTools(running_app["browser"])
    others: dict[str, tuple[dict[str, Any], str, int]] = {}
    try:
        tools.call("Page.enable")
        state = _load(tools, base, "table")
        png = _screenshot(tools, "detection")
        html = tools.evaluate("document.documentElement.outerHTML")
        (ARTIFACTS / "app-detection.html").write_text(html)
        # every other page draws in the browser too (charts are rendered client-side)
        for path, _title, _marker in OTHER_PAGES:
            page_state = _load(tools, base + path, "title")
            text = tools.evaluate("document.querySelector('[data-testid=\"stMain\"]').innerText")
            charts = tools.evaluate(
                'document.querySelectorAll(\'[data-testid="stVegaLiteChart"] canvas, '
                '[data-testid="stVegaLiteChart"] svg\').length'
            )
            others[path] = (page_state, str(text or ""), int(charts or 0))
            _screenshot(tools, path)
    finally:
        tools.close()
    assert state.get("state") == "notRunning", state
    assert state["title"] == "Detection"
    assert state["errors"] == 0
    table = state["table"]
    assert label("runaway_retry") in table and label("burst") in table
    assert expected in table
    assert f"{runaway['detected']}/{runaway['runs']}" in table
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 20_000
    for path, title, marker in OTHER_PAGES:
        page_state, text, charts = others[path]
        assert page_state["state"] == "notRunning" and page_state["title"] == title, page_state
        assert page_state["errors"] == 0, path
        assert marker in text, (path, text[:500])
        assert charts > 0, f"{path}: no chart drawn"
