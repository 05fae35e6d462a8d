"""The Detection page's "Split and configuration" section: what the run was, saved with it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st

from toolwatch import study
from toolwatch.app.dashboard import hints, ui


def show(
    chosen: dict[str, Any], config: dict[str, Any], split: dict[str, Any], store: Path
) -> None:
    """The run's split beside the study's, its saved configuration and the command that
    repeats it, folded away under the Detection page."""
    with st.expander("Split and configuration (saved with the results)"):
        rows = []
        for name in ("train", "calibration", "test"):
            ours = split.get(name, [None, None])
            pub = study.SPLITS[name]
            rows.append(
                {  # ours are streams (session × agent), as the CLI's "ours (streams / calls)"
                    "split": name,
                    "streams": ui.count(ours[0]),
                    "calls": ui.count(ours[1]),
                    "study: sessions": ui.count(pub[0]),
                    "study: calls": ui.count(pub[1]),
                }
            )
        st.table(pd.DataFrame(rows).set_index("split"))
        st.json(config, expanded=False)
        st.caption(
            "Re-run exactly: `toolwatch experiment --store "
            f"{hints.store_arg(store)} --rerun {chosen['run_id']}`"
        )
