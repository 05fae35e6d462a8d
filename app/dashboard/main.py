"""The dashboard's entry script (``toolwatch app`` runs ``streamlit run`` on this file).

It checks the store once per run — a missing or unreadable store is a clear error on every
page, an empty one a short guide to filling it — draws the sidebar (the store, the model and
the one global time range, :func:`~toolwatch.app.dashboard.url_state.time_range`), then hands
over to the chosen page. Every page reads its state from the URL
(:mod:`toolwatch.app.dashboard.url_state`), so a link opens the same view.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import streamlit as st

from toolwatch.app.dashboard import queries as q
from toolwatch.app.dashboard import url_state as url
from toolwatch.app.dashboard.settings import MODEL_IN_STORE
from toolwatch.app.dashboard.ui import fill_hint, settings

HERE = Path(__file__).resolve().parent
#: (script, title, icon, url path)
PAGES: tuple[tuple[str, str, str, str], ...] = (
    ("detection_page.py", "Detection", ":material/radar:", "detection"),
    ("replay_page.py", "Replay", ":material/replay:", "replay"),
    ("sessions_page.py", "Sessions", ":material/timeline:", "sessions"),
    ("live_page.py", "Live", ":material/notifications_active:", "live"),
    ("workbench_page.py", "Workbench", ":material/science:", "workbench"),
    ("corpus_page.py", "Corpus", ":material/dataset:", "corpus"),
    ("explore_page.py", "Explore", ":material/database_search:", "explore"),
)


#: The default page's own path: unique but never in a URL (Streamlit serves it at ``/``).
ROOT = "home"

#: The main column's side padding on a desktop (Streamlit's wide layout gives 5rem a side from
#: 736 px up): at 3rem a 1,366 px laptop's main column is 968 px instead of 904, where the
#: Detection table's columns (up to 951 px with its "streams" header) did not fit.
DESKTOP_PAD_REM = 3
PAGE_CSS = f"""<style>
@media (min-width: 736px) {{
  [data-testid="stMainBlockContainer"] {{
    padding-left: {DESKTOP_PAD_REM}rem; padding-right: {DESKTOP_PAD_REM}rem;
  }}
}}
</style>"""


def _pages() -> list[Any]:
    """The pages, the first the default at ``/``, and the first again, hidden, at its own
    path: Streamlit serves a default page at ``/`` only, so without the twin ``/detection``
    (the path the table gives it) opened a "Page not found" dialog."""
    (name, title, icon, path), *rest = PAGES
    return [
        st.Page(str(HERE / name), title=title, icon=icon, url_path=ROOT, default=True),
        *(st.Page(str(HERE / n), title=t, icon=i, url_path=p) for n, t, i, p in rest),
        st.Page(str(HERE / name), title=title, icon=icon, url_path=path, visibility="hidden"),
    ]


def main() -> None:
    st.set_page_config(page_title="toolwatch", page_icon=":material/radar:", layout="wide")
    st.html(PAGE_CSS)
    s = settings()
    nav = st.navigation(_pages())
    state = q.store_state(s.store)
    url.remember_span(url.time_range(q.data_days(s.store) if state.status == "ok" else None))
    with st.sidebar:
        st.caption(f"store `{s.store}`")
        if s.model is not None:
            st.caption(
                f"model `{s.model}`" + (" (store's own)" if s.model_origin == "store" else "")
            )
        else:
            st.caption(
                f"no model: `toolwatch train --store STORE` saves `{MODEL_IN_STORE}` in the "
                "store, where the app looks (or start it with `--model FILE`)"
            )
    if state.status == "missing":
        st.error(
            f"**No store at `{s.store}`.** Start the app with `--store PATH` pointing at a "
            f"toolwatch store, or create one with {fill_hint(q.CALLS, s.store)}. "
            f"{fill_hint('demo', s.store)}"
        )
        st.stop()
    if state.status == "unreadable":
        st.error(f"**The store cannot be read.** {state.error}")
        st.stop()
    if state.status == "empty":
        st.title("toolwatch")
        st.info(
            f"The store `{s.store}` is empty. Fill it, then reload this page:\n\n"
            f"- **calls** (Sessions, Corpus): {fill_hint(q.CALLS, s.store)}\n"
            f"- **detection results** (Detection): {fill_hint(q.EXPERIMENTS, s.store)}\n"
            f"- **weekly false alarms** (Replay): {fill_hint(q.REPLAYS, s.store)}\n"
            f"- **live alerts** (Live): {fill_hint(q.ALERTS, s.store)}\n"
            f"- **workbench runs** (Workbench): {fill_hint(q.WORKBENCH_RUNS, s.store)}\n\n"
            f"{fill_hint('demo', s.store)}"
        )
        st.stop()
    nav.run()


if __name__ == "__main__":
    main()
