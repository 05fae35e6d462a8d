"""The experiment and the replay on real calls (the committed slice of dev-real): the method
holds on real agents' traffic, the client quirks are treated as documented, and dev-real's own
21-column files load."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from support.dev_real import dev_real_calls, dev_real_first_days, dev_real_store
from toolwatch.injection.experiment.config import ExperimentConfig
from toolwatch.injection.experiment.protocol import run_experiment
from toolwatch.injection.experiment.replay import ReplayConfig, chance_of_as_many, run_replay
from toolwatch.injection.experiment.replay_report import render
from toolwatch.injection.experiment.results import ExperimentResult
from toolwatch.injection.experiment.storage import load_calls

SHARES = (0.44, 0.07)


@pytest.fixture(scope="module")
def real() -> ExperimentResult:
    config = ExperimentConfig(split_shares=SHARES, bootstrap=200, ablation=False)
    return run_experiment(dev_real_calls(), config)


def test_warm_up_agents_are_kept_apart_and_the_real_loop_is_caught(real: ExperimentResult) -> None:
    split = real.split
    assert [split["train"][0], split["calibration"][0], split["test"][0]] == [89, 17, 31]
    warm = split["artefacts"]["warmup_agent"]
    assert warm["train"] == [15, 1188] and warm["test"] == [0, 0]
    # the 1,164 failing Bash calls of the warm-up loop: far above every threshold
    assert warm["scored"]["long"] == 1
    assert warm["scored"]["alarming_fa_target"] == warm["scored"]["alarming_operating_point"] == 1
    assert warm["scored"]["largest_all_cusum"] > 100


def test_the_method_on_real_calls(real: ExperimentResult) -> None:
    def rate(kind: str, cue: str = "all", det: str = "cusum", mode: str = "fa_target") -> float:
        cell = real.cell(kind, cue, det, mode=mode)
        assert cell is not None
        return cell.rate

    # 31 normal test streams: the levels around 5 % are 1/31 and 2/31, both reported
    assert real.thresholds[("standard", "all", "cusum", "fa_target")].fa_reached == 1 / 31
    assert real.thresholds[("standard", "all", "cusum", "fa_next")].fa_reached == 2 / 31
    assert rate("burst", mode="fa_next") >= 0.9 and rate("burst", "time", "point") == 1.0
    assert rate("runaway_retry", mode="fa_next") >= 0.75
    for control in ("control_other_normal", "control_same_response_burst"):
        assert rate(control) <= 0.05 and rate(control, mode="fa_next") <= 0.1
    assert abs(rate("burst", det="ewma") - rate("burst")) <= 0.25
    # out-of-scope is measured: every run placed (rare MCP tools or rare unused built-ins)
    assert not any(k.startswith("skipped") for k in real.notes["out_of_scope_tool"])


def test_dev_reals_own_21_columns_load_and_then_nothing_is_flagged(tmp_path: Path) -> None:
    store = dev_real_store(tmp_path / "store21", flags=False)
    calls = load_calls(store)
    # the store's view has every registered column; the 21-column files read it as null
    quirks = calls.column("client_quirk") if "client_quirk" in calls.column_names else None
    assert quirks is None or quirks.null_count == calls.num_rows
    assert calls.num_rows == 9083
    result = run_experiment(
        calls,
        ExperimentConfig(
            split_shares=SHARES, seeds=(0,), bootstrap=20, ablation=False, kinds=("burst",)
        ),
    )
    assert result.split["train"][0] == 89 + 15 and result.split["artefacts"] == {}


def test_replay_of_real_calls_through_the_live_scorer() -> None:
    config = ReplayConfig(
        experiment=ExperimentConfig(split_shares=SHARES, seeds=(0,)),
        replay_kinds=("burst", "runaway_retry"),
    )
    result = run_replay(dev_real_calls(), config)
    adaptive, frozen = result.totals["adaptive"], result.totals["frozen"]
    assert adaptive["streams"] == frozen["streams"] == 31
    assert sum(r.normal for r in result.weeks) == 31
    # the copies are labelled: never folded (only the test split's own calls are)
    test_calls = result.split["test_split_all"][1]
    assert 0 < adaptive["counts"]["folded_calls"] <= test_calls
    assert adaptive["counts"]["pooled"] > 0 and frozen["counts"]["folded"] == 0
    assert adaptive["detection"]["burst"][1] == 31  # one copy per long stream and seed
    assert adaptive["alarmed"] <= frozen["alarmed"]
    text = render(result)
    assert "adaptive: alarming (95% CI)" in text and "frozen: alarming" in text
    assert "thin" in text  # every week has fewer than 20 streams here
    # a week above 2× the target is judged beyond chance by the exact one-sided binomial test
    target = config.experiment.target_fa
    judged = 0
    for model, totals in result.totals.items():
        beyond = {b["week"]: b for b in totals["weeks_over_2x_target_beyond_chance"]}
        assert set(beyond) <= set(totals["weeks_over_2x_target"])
        for row in result.weeks[1:]:
            if row.week not in totals["weeks_over_2x_target"]:
                continue
            k, n = row.alarmed[model], row.normal
            p = sum(math.comb(n, i) * (2 * target) ** i * (1 - 2 * target) ** (n - i)
                    for i in range(k, n + 1))  # fmt: skip
            assert (row.week in beyond) == (p < 0.05)
            if row.week in beyond:
                assert beyond[row.week]["p"] == pytest.approx(p)
            judged += 1
        assert f"{model}: weeks after the first" in text
    assert judged > 0  # the frozen model has weeks above 2× the target on this slice
    assert "above it beyond chance (one-sided binomial test, p < 0.05)" in text


def test_the_replay_says_what_became_of_the_warm_up_agents_of_its_test_split() -> None:
    """The warm-up loop (1,164 failing calls) in the test split is replayed like every stream
    but never counted as normal: the header counted it as a short stream ("9 test-split streams
    (3 with ≥ 30 calls)") and nothing said it was there or that the live scorer alarmed on it."""
    config = ReplayConfig(
        experiment=ExperimentConfig(split_shares=(0.6, 0.2), seeds=(0,)), replay_kinds=("burst",)
    )
    result = run_replay(dev_real_first_days(), config)
    assert result.split["test"][0] == 3 and result.split["replayed_streams"] == 9
    assert result.split["artefacts"]["warmup_agent"]["test"] == [5, 1171]
    for model in ("adaptive", "frozen"):
        assert result.totals[model]["streams"] == 3  # the loop is no normal stream
        assert result.totals[model]["artefacts"] == {
            "warmup_agent": {"streams": 5, "calls": 1171, "long": 1, "alarmed": 1}
        }
    text = render(result)
    assert text.startswith(
        "toolwatch replay — 9 test-split streams (3 normal with ≥ 30 calls, 5 client "
        "artefacts reported apart) replayed"
    )
    assert (
        "client artefact warmup_agent: 5 in the test split (1,171 calls) — replayed, never "
        "folded, pooled or counted among the normal streams; of the 1 with ≥ 30 calls, "
        "alarmed: 1 (adaptive), 1 (frozen)\n"
    ) in text


def test_the_replay_holds_the_threshold_at_the_target_it_reports() -> None:
    """The experiment's target is the live scorer's too, whatever the adaptive config said:
    a replay asked for 20 % alarms more than one asked for 5 %, and says 20 %."""
    runs = {
        fa: run_replay(
            dev_real_calls(),
            ReplayConfig(
                experiment=ExperimentConfig(split_shares=SHARES, seeds=(0,), target_fa=fa),
                replay_kinds=("burst",),
            ),
            models=("adaptive",),
        )
        for fa in (0.05, 0.2)
    }
    assert runs[0.2].config.adaptive.target_fa == 0.2
    assert runs[0.2].totals["adaptive"]["alarmed"] > runs[0.05].totals["adaptive"]["alarmed"]
    low, high = (r.models["adaptive"].thresholds[-1][1] for r in runs.values())
    assert high < low


def test_a_weeks_alarms_are_judged_by_the_exact_binomial_tail() -> None:
    # by hand: 5 of 7 at 10 %: C(7,5)·0.1⁵·0.9² + C(7,6)·0.1⁶·0.9 + 0.1⁷
    assert chance_of_as_many(5, 7, 0.1) == pytest.approx(1.701e-4 + 6.3e-6 + 1e-7)
    # 2 of 4: 1 − 0.9⁴ − 4·0.1·0.9³ = 0.0523, just not below 0.05; one alarm of one: 0.1
    assert chance_of_as_many(2, 4, 0.1) == pytest.approx(0.0523)
    assert chance_of_as_many(1, 1, 0.1) == pytest.approx(0.1)
    assert chance_of_as_many(0, 6, 0.1) == pytest.approx(1.0)


def test_replay_fits_the_named_variant_it_is_given() -> None:
    """``replay --model-config``: the frozen model is the variant (its header says which), so a
    user can see a variant's weekly false alarms before training it for the collector."""
    kinds = ("runaway_retry",)
    runs = {
        name: run_replay(
            dev_real_calls(),
            ReplayConfig(
                experiment=ExperimentConfig(split_shares=SHARES, seeds=(0,), model=model),
                replay_kinds=kinds,
            ),
        )
        for name, model in (("default", {}), ("novel", {"order_smoothing": "witten_bell_novel"}))
    }
    assert "order_smoothing=witten_bell_novel;" in render(runs["novel"])
    assert "order_smoothing" not in render(runs["default"])
    frozen = [r.models["frozen"].normal_max for r in runs.values()]
    assert frozen[0].keys() == frozen[1].keys() and frozen[0] != frozen[1]
