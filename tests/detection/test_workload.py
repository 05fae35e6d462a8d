"""The synthetic workload the detection tests share is deterministic and has streams."""

from __future__ import annotations

from support.detection import workload


def test_workload_is_deterministic_and_has_streams() -> None:
    a, b = workload(3, 5), workload(3, 5)
    assert a.equals(b)
    assert a.num_rows > 0
    assert a.column("agent_id").null_count < a.num_rows  # some subagent calls
