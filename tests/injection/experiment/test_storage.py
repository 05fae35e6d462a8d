"""``experiment_runs`` rows: every run names its stream's agent and its place in the test
split (the bootstrap's order), so the dashboard can recompute the experiment's intervals."""

from __future__ import annotations

from toolwatch.injection.experiment.results import ExperimentResult
from toolwatch.injection.experiment.storage import run_rows


def test_runs_carry_their_agent_and_place_in_the_split(result: ExperimentResult) -> None:
    rows = run_rows(result).to_pandas()
    one = rows[
        (rows["variant"] == "standard")
        & (rows["cue_set"] == "all")
        & (rows["detector"] == "cusum")
        & (rows["threshold_mode"] == "fa_target")
    ]
    normal = one[one["kind"] == "normal"]
    n = result.split["test"][0]
    assert list(normal["stream_index"]) == list(range(n))  # the split's own order
    subagents = normal[normal["agent_id"].notna()]
    assert 0 < len(subagents) < n  # the simulated corpus has long subagent streams
    assert list(subagents["session_id"]) == [
        f"{s.split('/')[0]}/{a}"
        for s, a in zip(subagents["session_id"], subagents["agent_id"], strict=True)
    ]
    assert not normal.loc[normal["agent_id"].isna(), "session_id"].str.contains("/").any()
    place = dict(zip(normal["session_id"], normal["stream_index"], strict=True))
    injected = one[one["kind"] != "normal"]
    assert len(injected) > n
    assert (injected["session_id"].map(place) == injected["stream_index"]).all()
    agent = dict(zip(normal["session_id"], normal["agent_id"], strict=True))
    assert (injected["session_id"].map(agent).fillna("-") == injected["agent_id"].fillna("-")).all()
