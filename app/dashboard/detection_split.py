"""The Detection page's "Split and configuration" section: what the run was, saved with it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st

from toolwatch import study
from toolwatch.app.dashboard import hints, html_table, ui
from toolwatch.detection.calls.split import placed_by_arrival_line
from toolwatch.injection.experiment.split import split_rows


def show(
    chosen: dict[str, Any], config: dict[str, Any], split: dict[str, Any], store: Path
) -> None:
    """The run's split beside the study's — the rows ``toolwatch experiment`` prints
    (:func:`split_rows`: the short test streams, the client artefacts and the total too) —
    its saved configuration and the command that repeats it, folded away under the page."""
    with st.expander("Split and configuration (saved with the results)"):
        min_calls = int(config.get("min_calls", study.TEST_MIN_CALLS))
        rows = [
            {  # ours are streams (session × agent), as the CLI's "ours (streams / calls)"
                "split": r.name,
                "streams": ui.count(r.streams),
                "calls": ui.count(r.calls),
                "study: sessions": ui.count(r.study[0]) if r.study else "–",
                "study: calls": ui.count(r.study[1]) if r.study else "–",
            }
            for r in split_rows(split, min_calls)
        ]
        # a block per split on a phone (Streamlit's table scrolled inside its box there)
        html_table.table(pd.DataFrame(rows), key="split", height=None)
        placed = placed_by_arrival_line(split)
        if placed:
            st.caption(placed[:1].upper() + placed[1:] + ".")
        st.json(config, expanded=False)
        st.caption(
            "Re-run exactly: `toolwatch experiment --store "
            f"{hints.store_arg(store)} --rerun {chosen['run_id']}`"
        )
