"""The shared canary search (``support.canary``) is itself right: every exported form is found,
and a decimal CRC-32 only as a number of its own, never as digits inside a longer number."""

from __future__ import annotations

import zlib

import pytest

from support.canary import assert_absent, forms, make_canary


def test_every_form_of_the_canary_is_found() -> None:
    canary = make_canary()
    for name, needle in forms(canary).items():
        with pytest.raises(AssertionError, match=name):
            assert_absent(b"x " + needle + b" y", canary, "here")


def test_a_decimal_crc_is_a_number_of_its_own() -> None:
    canary = make_canary()
    crc = str(zlib.crc32(canary.encode())).encode()
    for exported in (b'{"v": ' + crc + b"}", b"crc " + crc + b".", b"v=" + crc):
        with pytest.raises(AssertionError, match="crc32 of canary"):
            assert_absent(exported, canary, "here")
    # a model file's floats hold digit runs of every kind: inside them it is chance
    for inside in (b"0.9" + crc + b"1", b"1" + crc, crc + b".5", b"7." + crc):
        assert_absent(inside, canary, "a float")
