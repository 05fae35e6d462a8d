"""The future-clock guard every room shares: how far after its arrival a call may be stamped.

A call's stamp is its client's clock; the collector's arrival mark (``received_time``) is this
machine's. A client whose clock runs ahead would otherwise drag whatever orders streams by
time to its date: the live scorer's event clock (:mod:`toolwatch.detection.alerting`, which
re-exports the constant), the replay's arrivals
(:mod:`toolwatch.injection.experiment.replay_clock`) and the split by time
(:mod:`toolwatch.detection.calls.split`, which places such a stream by its arrival).
"""

from __future__ import annotations

from typing import Final

#: How far after its arrival a call may be stamped before its time is distrusted, in seconds.
CLOCK_AHEAD_S: Final = 300.0
