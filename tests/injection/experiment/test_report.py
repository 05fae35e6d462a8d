"""The experiment's report: the study's tables, notes and the headline's latency legend."""

from __future__ import annotations

import json
import re

from toolwatch.injection.experiment.formats import percent
from toolwatch.injection.experiment.report import headline, render, summary
from toolwatch.injection.experiment.report_beyond import beyond_section
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
    assert "calibration split holds" not in text  # 28 streams, 3,144 calls: none either


def test_one_seed_is_counted_in_the_singular(result: ExperimentResult) -> None:
    """`experiment --seeds 1` printed "Runs: 1 seeds × 64 test streams" (the Replay page and
    `toolwatch replay` say "1 seed")."""
    n = result.split["test"][0]
    assert f"Runs: 1 seed × {n:,} test streams = {n:,} per kind; " in render(result)


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
    assert f"at {percent(below.fa_reached, 1)}% = {k_below}/{n} streams" in text
    assert f"at {percent(above.fa_reached, 1)}% = {k_above}/{n} streams" in text
    up = small.cell("burst", "all", "cusum", mode="fa_next")
    assert up is not None and up.rate >= small.cell("burst", "all", "cusum").rate  # type: ignore[union-attr]
    # --json: each headline row reads both levels as k/n, no cross-reference to "cells"
    row = summary(small)["headline"][0]
    assert row["kind"] == "burst" and (row["fa_alarming"], row["fa_streams"]) == (k_below, n)
    assert row["fa_next"] == {
        "rate": up.rate,
        "ci": [up.ci_low, up.ci_high],
        "fa_reached": above.fa_reached,
        "fa_alarming": k_above,
        "fa_streams": n,
    }


def test_json_headline_rows_carry_the_level_as_k_of_n(result: ExperimentResult) -> None:
    """A headline row had only ``fa_reached``; the k/n it stands for was in the text alone."""
    doc = json.loads(json.dumps(summary(result)))
    fa = result.thresholds[("standard", "all", "cusum", "fa_target")].fa_reached
    assert len(doc["headline"]) == len(result.config.kinds)
    for row in doc["headline"]:
        assert (row["fa_alarming"], row["fa_streams"]) == (round(fa * 64), 64)
        assert row["fa_reached"] == fa and row["fa_next"] is None  # not thin: one level
    assert doc["warnings"] == []


def test_the_beyond_section_prints_whole_percents_like_every_detection_table(
    result: ExperimentResult,
) -> None:
    """Its all·CUSUM column printed 98% beside cue and union columns at 93.8%."""
    section = beyond_section(result)
    assert section is not None and " ∨ " in section
    lines = section.splitlines()
    rows = lines[lines.index(next(x for x in lines if x.startswith("---"))) + 1 :]
    rows = [r for r in rows if not r.startswith("false alarms")]
    assert len(rows) >= 7
    for line in rows:
        cells = re.split(r"\s{2,}", line.strip())[1:]
        assert len(cells) == 4 and all(re.fullmatch(r"\d+%|–", c) for c in cells), line
    assert re.search(r"4\.7% = 3/64", section)  # the false-alarm levels keep one decimal


def test_a_thin_calibration_split_warns_as_train_does() -> None:
    """4 calibration streams (80 calls) set the operating point without a word, while a thin
    test split was warned about; ``toolwatch train`` warns about the same split."""
    from toolwatch.collector.sources.simulator import simulate
    from toolwatch.injection.experiment.config import ExperimentConfig
    from toolwatch.injection.experiment.protocol import run_experiment

    small = run_experiment(
        simulate(seed=0),
        ExperimentConfig(
            split_shares=(0.5, 0.01), seeds=(0,), bootstrap=0, ablation=False, kinds=("burst",)
        ),
    )
    assert small.split["calibration"][:2] == [4, 80] and small.split["test"][0] == 64
    warning = (
        "warning: the calibration split holds 4 streams and 80 calls: a top 0.10% threshold "
        "needs at least 1,000 calls and 10 streams to mean anything; give calibration a larger "
        "share (--split-shares) or more days (--split-dates)"
    )
    assert warning in render(small).splitlines()
    assert warning in headline(small).splitlines()
    assert summary(small)["warnings"] == [warning]
    assert "test split is thin" not in render(small)


def test_an_empty_calibration_split_says_the_operating_point_is_the_training_calls() -> None:
    """With no calibration stream the protocol sets the operating point on the training calls
    (in-sample), while the report said "top 0.1 % of calibration call statistics" and warned
    only that 0 calls were too few."""
    from toolwatch.collector.sources.simulator import simulate
    from toolwatch.injection.experiment.config import ExperimentConfig
    from toolwatch.injection.experiment.protocol import run_experiment
    from toolwatch.injection.experiment.scoring import fit_model
    from toolwatch.injection.experiment.split import normal_sessions, split_by_time

    calls = simulate(seed=0)
    config = ExperimentConfig(
        split_shares=(0.5, 0.0), seeds=(0,), bootstrap=0, ablation=False, kinds=("burst",)
    )
    empty = run_experiment(calls, config)
    assert empty.split["calibration"][:2] == [0, 0]
    split = split_by_time(normal_sessions(calls), config)
    on_train = fit_model(split.train, split.train, config).threshold("all", "cusum")
    op = empty.thresholds[("standard", "all", "cusum", "operating_point")].value
    assert op == on_train  # what the report now says
    warning = (
        "warning: the calibration split is empty, so the operating point is the top 0.10% of "
        "the training calls' statistics (in-sample: it alarms on more streams than a held-out "
        "threshold would); give calibration a share (--split-shares) or days (--split-dates)"
    )
    text = render(empty)
    assert warning in text.splitlines() and summary(empty)["warnings"] == [warning]
    assert "Operating point (threshold = top 0.1 % of training call statistics)" in text
    assert "calibration call statistics" not in text


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


def test_the_ablation_lists_each_time_detector_once() -> None:
    """When time·point was the best time detector with and without response ids, the ablation
    printed its 'time·point' rows twice per kind (the best detector's row, then time·point's
    own), identical: a reader looked for the difference between them."""
    from support.detection import session, table
    from toolwatch.injection.experiment.config import ExperimentConfig
    from toolwatch.injection.experiment.protocol import run_experiment
    from toolwatch.injection.experiment.report import best_detector_per_cue

    calls = table(
        session(["a", "b", "c"] * 20, name="s1")
        + session(["a", "c", "b"] * 20, name="s2", start=3 * 86400.0)
    )
    kinds = ("burst", "runaway_retry", "control_same_response_burst")
    small = run_experiment(
        calls, ExperimentConfig(seeds=(0,), bootstrap=20, ablation=True, kinds=kinds)
    )
    assert best_detector_per_cue(small, "no_response_ids")["time"] == "point"
    text = render(small)
    rows = text[text.index("Ablation") :].splitlines()
    for kind in ("burst (different responses)", "runaway retry", "control: same-response burst"):
        named = [r.split("  ")[0] for r in rows if r.startswith(f"{kind}, ")]
        assert named == [f"{kind}, time·point", f"{kind}, all·cusum"]
