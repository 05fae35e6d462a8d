"""``SessionSlots``: the ``Retry-After`` of a full server's 503 from its sessions' idle clocks
(the HTTP round trip is in ``test_serving.py``)."""

from __future__ import annotations

from toolwatch.injection.proxy.session_slots import SessionSlots


class _Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _idle(slots: SessionSlots, session: str) -> None:
    slots.begin(session)
    slots.end(session)


def test_the_soonest_idle_expiry_is_the_wait_within_1_and_60_s() -> None:
    clock = _Clock()
    slots = SessionSlots(30.0, clock)
    _idle(slots, "old")
    clock.now += 10
    _idle(slots, "new")
    clock.now += 2.5
    assert slots.retry_after() == 18  # "old": 30 s after its last request, 12.5 s ago
    clock.now += 17.6  # "old" has idled out: the SDK closed it
    assert slots.retry_after() == 10 and "old" not in slots and "new" in slots
    clock.now += 10.0  # "new" too, and nothing else is open: look again at once
    assert slots.retry_after() == 1 and len(slots) == 0
    assert SessionSlots(1800.0, clock).retry_after() == 1  # nothing followed yet
    long = SessionSlots(1800.0, clock)
    _idle(long, "s")
    assert long.retry_after() == 60  # 30 min ahead: look again within a minute
    assert SessionSlots(None, clock).retry_after() == 60  # sessions never idle out


def test_a_request_in_flight_holds_its_session_and_forgetting_frees_it() -> None:
    clock = _Clock()
    slots = SessionSlots(30.0, clock)
    slots.begin("busy")  # an open GET stream
    _idle(slots, "idle")
    clock.now += 29.0
    assert slots.retry_after() == 1  # "idle" closes within the second
    clock.now += 5.0
    assert slots.retry_after() == 30 and "busy" in slots  # a whole timeout after it ends
    slots.end("busy")
    clock.now += 4.0
    assert slots.retry_after() == 26
    slots.forget("busy")  # its client ended it (DELETE)
    slots.end("busy")  # a request that was still in flight on it ends: nothing to follow
    assert len(slots) == 0
