"""The experiment's report: the study's tables, notes and the headline's latency legend."""

from __future__ import annotations

from toolwatch.injection.experiment.report import headline, render
from toolwatch.injection.experiment.results import ExperimentResult


def test_exfiltration_without_a_read_is_reported(result: ExperimentResult) -> None:
    notes = result.notes["key_exfiltration"]
    text = render(result)
    if notes.get("read_pair_inserted"):
        assert "Read + network call pair was inserted" in text
    assert "study (95% CI)" in text and "91% (85–95)" in text


def test_headline_labels_its_latency_and_the_studys(result: ExperimentResult) -> None:
    text = headline(result)
    assert "latency all·CUSUM" in text
    burst = result.cell("burst", "time", "point")
    assert burst is not None
    assert (
        f"burst (different responses): study 1, ours {burst.median_latency:g} (both time·point)"
        in text
    )
    fa = result.thresholds[("standard", "all", "cusum", "fa_target")].fa_reached
    # the header states the level reached, as k/n, before the target asked for
    assert text.startswith(
        f"Detection at {100 * fa:.1f}% false alarms ({round(fa * 64)}/64 normal test streams "
        "alarm; target 5%)"
    )
    assert "test split is thin" not in text  # 64 normal test streams: no warning


def test_a_thin_split_shows_both_levels_and_warns() -> None:
    from toolwatch.collector.sources.simulator import simulate
    from toolwatch.injection.experiment.config import ExperimentConfig
    from toolwatch.injection.experiment.protocol import run_experiment

    small = run_experiment(
        simulate(seed=2, scale=0.25),
        ExperimentConfig(
            split_shares=(0.44, 0.07),
            seeds=(0,),
            bootstrap=20,
            ablation=False,
            kinds=("burst", "runaway_retry"),
        ),
    )
    n = small.split["test"][0]
    assert n < 50
    below = small.thresholds[("standard", "all", "cusum", "fa_target")]
    above = small.thresholds[("standard", "all", "cusum", "fa_next")]
    assert below.fa_reached <= 0.05 < above.fa_reached and above.value < below.value
    # the two levels are neighbours: nothing reachable lies between them
    k_below, k_above = round(below.fa_reached * n), round(above.fa_reached * n)
    assert k_above > k_below
    text = render(small)
    assert f"warning: the test split is thin — only {n} normal test streams" in text
    assert f"at {100 * below.fa_reached:.1f}% = {k_below}/{n} streams" in text
    assert f"at {100 * above.fa_reached:.1f}% = {k_above}/{n} streams" in text
    up = small.cell("burst", "all", "cusum", mode="fa_next")
    assert up is not None and up.rate >= small.cell("burst", "all", "cusum").rate  # type: ignore[union-attr]


def test_a_target_is_printed_as_asked_not_rounded() -> None:
    from toolwatch.injection.experiment.formats import target_pct

    assert [target_pct(x) for x in (0.05, 0.053, 0.0525, 0.1, 0.2)] == [
        "5%",
        "5.3%",
        "5.25%",
        "10%",
        "20%",
    ]


def test_a_thin_split_names_the_target_it_was_given() -> None:
    """--target-fa 0.053 (1/19 = 5.26 % is reachable on 19 streams): the headline and the
    warning said "target 5%", so a reached "5.3% = 1/19" read as above the target."""
    from toolwatch.collector.sources.simulator import simulate
    from toolwatch.injection.experiment.config import ExperimentConfig
    from toolwatch.injection.experiment.protocol import run_experiment

    small = run_experiment(
        simulate(seed=2, scale=0.25),
        ExperimentConfig(
            split_shares=(0.44, 0.07),
            seeds=(0,),
            bootstrap=0,
            ablation=False,
            kinds=("burst",),
            target_fa=0.053,
        ),
    )
    text = render(small)
    assert small.split["test"][0] < 50
    assert "False alarms: target 5.3% of normal test streams" in text
    assert "normal test streams alarm; target 5.3%)" in text
    assert "the reachable levels nearest the target 5.3% are " in text
    assert "target 5%" not in text
    # no resamples: no "95 % intervals from 0 bootstrap resamples"; and a thin split says its
    # intervals understate the uncertainty (n = 3 streams all at 3/5 printed "60% (60–60)")
    assert "no intervals (--bootstrap 0)" in text and "from 0 bootstrap" not in text
    assert "understate the uncertainty (a rate every stream shares gets a zero-width" in text


def test_the_split_table_adds_up_to_the_data() -> None:
    """The text listed train, calibration and the long test streams only: the test split's
    short streams and the client artefacts kept apart were in --json alone, so the table's
    streams and calls did not add up to the data."""
    import re

    import pyarrow as pa
    import pyarrow.compute as pc

    from toolwatch.collector.sources.simulator import simulate
    from toolwatch.injection.experiment.config import ExperimentConfig
    from toolwatch.injection.experiment.protocol import run_experiment

    calls = simulate(seed=2, scale=0.25)
    subagent = pc.invert(pc.is_null(calls["agent_id"]))
    quirk = pa.array(["warmup_agent" if s else None for s in subagent.to_pylist()], pa.string())
    calls = calls.set_column(calls.schema.get_field_index("client_quirk"), "client_quirk", quirk)
    small = run_experiment(
        calls,
        ExperimentConfig(
            split_shares=(0.44, 0.07), seeds=(0,), bootstrap=0, ablation=False, kinds=("burst",)
        ),
    )
    table = render(small).split("\n\n")[0].splitlines()[3:]
    rows = dict(re.split(r"\s{2,}", line)[:2] for line in table)
    assert list(rows) == [
        "train",
        "calibration",
        "test (≥ 30 calls)",
        "test (< 30 calls, not injected)",
        "client artefacts (kept apart)",
        "total",
    ]
    counts = {k: [int(x.replace(",", "")) for x in v.split(" / ")] for k, v in rows.items()}
    total = counts.pop("total")
    assert (
        total
        == [small.split["data"]["streams"], small.split["data"]["calls"]]
        == [sum(c[i] for c in counts.values()) for i in range(2)]
    )
    assert counts["client artefacts (kept apart)"][0] > 0
    assert counts["test (< 30 calls, not injected)"][0] > 0
