"""Integer allocation: split a total into whole parts that add up exactly (calls per session,
MCP budgets per session, episode sizes, sessions per split group).
"""

from __future__ import annotations

import numpy as np


def partition(total: int, weights: np.ndarray, lo: int, hi: float | np.ndarray) -> np.ndarray:
    """Integers in [lo, hi] summing to ``total`` (clipped to what fits), ∝ ``weights``."""
    w = np.where(np.asarray(weights, dtype=float) > 0, weights, 1e-9)
    n = len(w)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    cap = np.broadcast_to(np.asarray(hi, dtype=float), (n,)).copy()
    total = int(min(max(total, lo * n), cap.sum()))
    x = np.full(n, float(lo))
    free = np.ones(n, dtype=bool)
    remaining = float(total - lo * n)
    while remaining > 1e-9 and free.any():  # water-filling: share, clip, re-share the excess
        x += remaining * w * free / (w * free).sum()
        over = x > cap
        remaining = float((x[over] - cap[over]).sum())
        x[over] = cap[over]
        free &= ~over
    out = np.floor(x + 1e-9).astype(np.int64)
    room = out < cap
    for i in np.argsort(-np.where(room, x - out, -1.0), kind="stable")[: total - int(out.sum())]:
        out[i] += 1
    return out


def largest_remainder(quota: np.ndarray, total: int, minimum: int) -> np.ndarray:
    """Integers ≥ ``minimum`` summing to ``total``, as close to ``quota`` as possible."""
    quota = quota * total / quota.sum()
    out = np.maximum(minimum, np.floor(quota)).astype(np.int64)
    while out.sum() < total:
        out[int(np.argmax(quota - out))] += 1
    while out.sum() > total:
        out[int(np.argmax(np.where(out > minimum, out - quota, -np.inf)))] -= 1
    return out
