"""How the experiment's reports write a kind, a share, an interval and a number (the CLI's
tables, the demo's headline and the dashboard alike)."""

from __future__ import annotations

import math
from decimal import ROUND_HALF_UP, Decimal

from toolwatch.injection.spans.kinds import PAYLOAD_ENCODINGS, PAYLOADS

_LABELS: dict[str, str] = {
    "burst": "burst (different responses)",
    "runaway_retry": "runaway retry",
    "sequence_hijack": "sequence hijack",
    "large_exfiltration": "large exfiltration",
    "exfiltration_2sigma": "exfiltration +2σ",
    "key_exfiltration": "key exfiltration",
    "out_of_scope_tool": "out-of-scope tool",
    "control_other_normal": "control: other normal 8",
    "control_same_response_burst": "control: same-response burst",
    **{
        f"exfil_{size}_{enc}": f"{size} exfil. w/ provenance ({enc})"
        for size in PAYLOADS
        for enc in PAYLOAD_ENCODINGS
    },
}


def label(kind: str) -> str:
    """A kind as the tables name it (``burst (different responses)``)."""
    return _LABELS.get(kind, kind)


def percent(x: float, digits: int = 0) -> str:
    """``100 · x`` to ``digits`` decimals, a half rounded up as by hand (``1/40`` → ``3``, as
    ``39/40`` → ``98``): Python's format rounds a half to even (``2``), and a share of a few
    dozen runs is often a half. The share is first cut to 9 decimals, so a binary float just
    under a half (``100 · 0.145`` = 14.4999…) counts as the half it stands for."""
    if not math.isfinite(x):
        return f"{100 * x:.{digits}f}"
    exact = Decimal(f"{100 * x:.9f}") + 0  # + 0: no "-0"
    return str(exact.quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP))


def pct(x: float | None, digits: int = 0) -> str:
    """``91%`` (``–`` for none / NaN); a half rounded up (:func:`percent`)."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    return f"{percent(x, digits)}%"


def target_pct(x: float) -> str:
    """A share as asked, never rounded to a neighbour: ``5%`` for 0.05, ``5.3%`` for 0.053,
    ``5.25%`` for 0.0525 (a target printed as ``5%`` beside a reached ``5.3% = 1/19`` would read
    as overshot)."""
    return f"{100 * x:.4f}".rstrip("0").rstrip(".") + "%"


def ci(lo: float | None, hi: float | None) -> str:
    """`` (85–95)``: an interval to append to a :func:`pct` (empty when unknown)."""
    if lo is None or hi is None or math.isnan(lo) or math.isnan(hi):
        return ""
    return f" ({percent(lo)}–{percent(hi)})"


def rate_ci(rate: float | None, lo: float | None, hi: float | None) -> str:
    """``91% (85–95)``: a rate with its 95 % interval (the interval left out when unknown)."""
    return pct(rate) + ci(lo, hi)


def num(x: float | None, fmt: str = "{:.2f}") -> str:
    """``x`` in ``fmt`` (``–`` for none / NaN)."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    return fmt.format(x)


def threshold_text(x: float) -> str:
    """A detection threshold as the reports write it (``7.41``); at a level every stream
    reaches, no finite threshold exists, so it says so rather than ``-inf``."""
    return "any score" if math.isinf(x) and x < 0 else f"{x:.2f}"
