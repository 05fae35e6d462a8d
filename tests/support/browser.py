"""A real browser on the running dashboard: ``toolwatch app`` on loopback, driven by Playwright
through the system's Chromium (``/usr/bin/chromium``; Playwright never downloads a browser
here), headless.

Used by the browser test (tests/app/dashboard/test_browser.py) and the 1 M-call measurement
(benchmarks/bench_app.py). Streamlit renders in the browser (the HTML it serves is an empty
shell until its script has talked to the server over a websocket), so a page is "painted" when
its title and its first piece of data (a table, a metric or a chart) are visible; it is
"settled" when the script has finished (``data-test-script-state="notRunning"``).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toolwatch.app.commands.app import free_port

CHROMIUM_FLAGS = (
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-dev-shm-usage",
)
VIEWPORT = {"width": 1400, "height": 1800}
#: Elements that carry a page's data (the first one visible = first paint).
DATA = (
    '[data-testid="stDataFrame"], [data-testid="stTable"], .tw-table, [data-testid="stMetric"], '
    '[data-testid="stVegaLiteChart"] canvas, [data-testid="stVegaLiteChart"] svg, '
    '[data-testid="stAlert"]'
)
#: The tables :func:`open_page` reads: Streamlit's grid and table, and the app's responsive
#: HTML table (``toolwatch.app.dashboard.html_table``).
TABLES = '[data-testid="stDataFrame"], [data-testid="stTable"], .tw-table'
IDLE = '[data-testid="stApp"][data-test-script-state="notRunning"]'


def chromium_path() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def chromium_or_skip() -> str:
    """The system Chromium for a browser test: skipped without it, except under ``CI=true``
    where a missing browser is a failure (``.ci/run`` installs Debian's)."""
    import pytest

    found = chromium_path()
    if found:
        return found
    if os.environ.get("CI") == "true":
        pytest.fail("CI=true but chromium is not installed (.ci/run installs Debian's chromium)")
    pytest.skip("chromium is not installed (Debian: apt-get install chromium; .ci/run does it)")


@contextlib.contextmanager
def running_app(store: Path, log: Path, timeout: float = 90) -> Iterator[str]:
    """``toolwatch app --store STORE --headless`` on a free loopback port; yields its URL."""
    port = free_port()
    with log.open("w") as out:
        command = [sys.executable, "-m", "toolwatch", "app", "--store", str(store)]
        proc = subprocess.Popen(
            [*command, "--port", str(port), "--headless"],
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: the app and its Streamlit child
        )
        try:
            _wait_healthy(port, proc, timeout)
            yield f"http://127.0.0.1:{port}/"
        finally:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


def _wait_healthy(port: int, proc: subprocess.Popen[bytes], timeout: float) -> None:
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


@contextlib.contextmanager
def browser(executable: str) -> Iterator[Any]:
    """A headless Chromium page (one context: the browser cache is kept between pages, as
    for a user moving through the app)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        chrome = p.chromium.launch(executable_path=executable, args=list(CHROMIUM_FLAGS))
        try:
            context = chrome.new_context(viewport=VIEWPORT, accept_downloads=True)
            yield context.new_page()
        finally:
            chrome.close()


@dataclass
class Loaded:
    """A page after it settled: its main text, tables (rows of cell text) and timings."""

    path: str
    painted_s: float
    settled_s: float
    title: str
    text: str
    tables: list[list[list[str]]]
    charts: int
    exceptions: list[str]


def open_page(page: Any, base: str, path: str, timeout_s: float = 120) -> Loaded:
    """Navigate to ``base + path`` (a full page load) and wait until it settles."""
    started = time.monotonic()
    page.goto(base + path.lstrip("/"))
    page.wait_for_selector("h1", timeout=timeout_s * 1000)
    # the first visible one (a table in a folded expander is hidden)
    page.locator(DATA).filter(visible=True).first.wait_for(timeout=timeout_s * 1000)
    painted = time.monotonic() - started
    page.wait_for_selector(IDLE, timeout=timeout_s * 1000)
    settled = time.monotonic() - started
    page.wait_for_timeout(1500)  # charts draw after the script finished
    page.wait_for_selector(IDLE, timeout=timeout_s * 1000)
    main = page.locator('[data-testid="stMain"]')
    tables = [
        t.evaluate(
            "el => Array.from(el.querySelectorAll('table tr')).map("
            "tr => Array.from(tr.querySelectorAll('th,td')).map(c => c.textContent.trim()))"
        )
        for t in page.locator(TABLES).all()
    ]
    return Loaded(
        path=path,
        painted_s=painted,
        settled_s=settled,
        title=page.locator("h1").first.inner_text(),
        text=main.inner_text(),
        tables=tables,
        charts=page.locator(
            '[data-testid="stVegaLiteChart"] canvas, [data-testid="stVegaLiteChart"] svg'
        ).count(),
        exceptions=page.locator('[data-testid="stException"]').all_inner_texts(),
    )


#: Each responsive table drawn (``.tw-table-KEY``): its key, its box's edges, the widths it
#: scrolls over and shows, its rows in the DOM, and each row's shown cells as
#: (label, text, left, right) — the label its ``data-label``, as a phone writes it before the
#: value.
RESPONSIVE_TABLES = (
    "() => Array.from(document.querySelectorAll('.tw-table')).filter(t => t.offsetParent)"
    ".map(t => { const r = t.getBoundingClientRect(); return {"
    " key: Array.from(t.classList).find(c => c.startsWith('tw-table-')).slice(9),"
    " left: r.left, right: r.right, scroll: t.scrollWidth, shown: t.clientWidth,"
    " header: Array.from(t.querySelectorAll('thead th')).map(c => c.textContent.trim()),"
    " rows: Array.from(t.querySelectorAll('tbody tr')).map(tr => Array.from("
    "tr.querySelectorAll('td')).filter(c => c.offsetParent).map(c => {"
    " const b = c.getBoundingClientRect(); return [c.dataset.label || '',"
    " c.textContent.trim(), b.left, b.right]; }))}; })"
)


def responsive_tables(page: Any) -> dict[str, dict[str, Any]]:
    """The drawn :data:`RESPONSIVE_TABLES` by key."""
    return {t["key"]: t for t in page.evaluate(RESPONSIVE_TABLES)}


def screenshot(page: Any, folder: Path, name: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"app-{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


#: The pages a first-paint measurement opens, by URL path.
PAGES = ("", "replay", "sessions", "live", "workbench", "corpus", "explore")


def first_paints(page: Any, base: str, paths: tuple[str, ...] = PAGES) -> dict[str, Loaded]:
    """Each page by URL after one warm-up load (the server's Python imports and the browser's
    script bundle are then loaded, as for a user who opened the app before)."""
    open_page(page, base, "")
    return {p: open_page(page, base, p) for p in paths}
