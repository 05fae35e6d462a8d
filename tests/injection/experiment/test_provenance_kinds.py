"""Exfiltration that carries provenance: what the injected call may honestly claim, and the
provenance cue beside the study's cues on real calls (the dev-real slice with its measured
provenance)."""

from __future__ import annotations

import numpy as np
import pytest

from support.detection import session, table
from support.dev_real import dev_real_calls
from toolwatch.injection.experiment.config import ExperimentConfig
from toolwatch.injection.experiment.protocol import run_experiment
from toolwatch.injection.experiment.report import render
from toolwatch.injection.experiment.results import ExperimentResult
from toolwatch.injection.spans.context import InjectionContext
from toolwatch.injection.spans.contract import InjectionError
from toolwatch.injection.spans.kinds import PROVENANCE_KINDS, ProvenanceExfiltrationParams
from toolwatch.injection.spans.provenance_exfiltration import (
    NOTE_PAYLOAD_CUT,
    inject_provenance_exfiltration,
    written_bytes,
)
from toolwatch.injection.spans.session_arrays import INJECTION_COLUMNS, split_sessions

EXTRA = ("source_tool", "reused_encoding", "reused_longest", "dest_seen", "duration_us")


def hand_made(outputs: list[tuple[str, int]]) -> list:
    """A training stream with a measured shell carrier, and a stream whose earlier results are
    ``outputs`` ((tool, output bytes)); every call lasts 1 ms."""
    train = session(["Read", "Bash", "Read"], name="train")
    train[1].update(egress="shell", payload_longest=10, payload_total=10, input_bytes=120)
    rows = session([t for t, _ in outputs] + ["Read"] * 3, name="victim", start=10_000.0)
    for row, (_, size) in zip(rows, outputs, strict=False):
        row["output_bytes"] = size
    columns = (*INJECTION_COLUMNS, *EXTRA)
    return [*split_sessions(table(train), columns), *split_sessions(table(rows), columns)]


def test_the_payload_comes_from_an_earlier_local_result_and_is_bounded_by_it() -> None:
    train, victim = hand_made([("Read", 5000), ("WebFetch", 90_000), ("Read", 300)])
    context = InjectionContext.from_sessions([train])
    assert set(context.carriers) == {"shell"}
    rng = np.random.default_rng(0)
    key = ProvenanceExfiltrationParams(40, "base64")
    inj = inject_provenance_exfiltration("exfil_key_base64", victim, 3, rng, context, key)
    call = {k: v[inj.position] for k, v in inj.calls.columns.items()}
    assert (call["egress"], call["payload_longest"], call["payload_total"]) == ("shell", 40, 40)
    assert call["reused_encoding"] == "base64" and call["dest_seen"] == "unseen"
    assert call["source_tool"] == "Read" and call["tool"] == "Bash"
    assert call["input_bytes"] == 120 + written_bytes(40, "base64") == 120 + 56
    assert call["label"] == "exfil_key_base64" and inj.inserted == 1
    # a 3 KB file: only the 5,000-byte Read holds it (WebFetch's result is remote)
    file = ProvenanceExfiltrationParams(3072, "url")
    inj = inject_provenance_exfiltration("exfil_file_url", victim, 3, rng, context, file)
    assert inj.calls["payload_longest"][inj.position] == 3072 and inj.note == ""
    assert inj.calls["input_bytes"][inj.position] == 120 + 4608
    # no local result of 3 KB (a remote result is never a source): the largest local one is
    # sent, and the run says so
    _, small = hand_made([("WebFetch", 90_000), ("Read", 300), ("Read", 50)])
    inj = inject_provenance_exfiltration("exfil_file_url", small, 3, rng, context, file)
    assert inj.calls["payload_longest"][inj.position] == 300 and inj.note == NOTE_PAYLOAD_CUT
    _, tiny = hand_made([("WebFetch", 90_000), ("Read", 50), ("Read", 50)])
    with pytest.raises(InjectionError, match="at least 96 bytes"):
        inject_provenance_exfiltration("exfil_file_url", tiny, 3, rng, context, file)
    # a 40-byte key fits in a 50-byte local result
    inj = inject_provenance_exfiltration("exfil_key_base64", tiny, 3, rng, context, key)
    assert inj.calls["payload_longest"][inj.position] == 40
    with pytest.raises(InjectionError, match="no egress call with provenance"):
        inject_provenance_exfiltration(
            "exfil_key_base64", tiny, 3, rng, InjectionContext.from_sessions([tiny]), key
        )


@pytest.fixture(scope="module")
def real() -> ExperimentResult:
    kinds = ("key_exfiltration", "control_other_normal", *PROVENANCE_KINDS)
    config = ExperimentConfig(
        split_shares=(0.44, 0.07), bootstrap=200, ablation=False, seeds=(0, 1), kinds=kinds
    )
    return run_experiment(dev_real_calls(provenance=True), config)


def test_provenance_beside_the_studys_cues_on_real_calls(real: ExperimentResult) -> None:
    def rate(kind: str, cue: str, det: str, mode: str) -> float:
        cell = real.cell(kind, cue, det, mode=mode)
        assert cell is not None, (kind, cue, det, mode)
        return cell.rate

    fa = real.thresholds[("standard", "provenance", "point", "operating_point")]
    assert fa.value == 1.0 and fa.fa_reached <= 0.10  # its learned thresholds
    for kind in PROVENANCE_KINDS:
        assert real.cell(kind, "provenance", "point").runs > 40  # type: ignore[union-attr]
        assert rate(kind, "provenance", "point", "operating_point") >= 0.95, kind
        # the study's cues alone stay near their false-alarm level on them
        assert rate(kind, "all", "cusum", "fa_target") < 0.5, kind
    # the study's kinds carry no provenance: the cue sees only the normal calls around them
    assert rate("key_exfiltration", "provenance", "point", "operating_point") <= 0.15
    text = render(real)
    assert "Beyond the study's record" in text
    assert "all·cusum ∨ novelty·point ∨ novelty·cusum ∨ provenance·point" in text
    assert "key exfil. w/ provenance (base64)" in text


def test_without_provenance_the_variants_and_the_cue_are_left_out() -> None:
    config = ExperimentConfig(
        split_shares=(0.44, 0.07),
        bootstrap=50,
        ablation=False,
        seeds=(0,),
        kinds=("burst", "exfil_key_verbatim"),
    )
    result = run_experiment(dev_real_calls(), config)
    assert result.config.kinds == ("burst",)
    assert not any(c.cue_set == "provenance" for c in result.cells)
    text = render(result)
    assert "Beyond the study's record" in text and "novelty·cusum ∨" not in text
    assert "provenance·point (learned thresholds)" not in text
    assert "all·cusum ∨ novelty·point ∨ novelty·cusum" in text
