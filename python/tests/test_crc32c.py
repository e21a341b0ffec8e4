"""The trainer's CRC32C matches the one every other part of the relay takes (Java's CRC32C, the
data plane's): the standard vectors, and long buffers summed in lanes against the byte loop."""

from __future__ import annotations

import mmap
import os

import numpy as np

from weight_relay import _crc32c
from weight_relay._crc32c import _crc32c_numpy, _raw_bytes, crc32c, format_crc32c


def test_the_standard_vectors() -> None:
    assert crc32c(b"123456789") == 0xE3069283
    # RFC 3720 (iSCSI), B.4
    assert crc32c(bytes(32)) == 0x8A9136AA
    assert crc32c(b"\xff" * 32) == 0x62A8AB43
    assert crc32c(bytes(range(32))) == 0x46DD794E
    assert crc32c(b"") == 0
    assert format_crc32c(0xE3069283) == "crc32c:e3069283"


def test_long_buffers_summed_in_lanes_match_the_byte_loop() -> None:
    for n in [(1 << 14) * 64, (1 << 14) * 64 + 13, (1 << 14) * 200 + 77]:
        data = os.urandom(n)
        assert crc32c(data) == _raw_bytes(0xFFFFFFFF, data) ^ 0xFFFFFFFF, n
        assert crc32c(np.frombuffer(data, dtype=np.uint8)) == crc32c(memoryview(data))


def test_the_hardware_sum_is_the_one_in_use_and_agrees_with_the_numpy_lanes() -> None:
    # The publisher sums every staged byte: the C build of google-crc32c must be what runs here
    # (the numpy lanes run at about 17 MB/s, a minute per GB of model).
    assert _crc32c.IMPLEMENTATION == "c"
    for n in [0, 1, 4095, (8 << 20) - 1, (8 << 20) + 1, (1 << 14) * 200 + 77]:
        data = os.urandom(n)
        assert crc32c(data) == _crc32c_numpy(memoryview(data)), n
    # a writable shared map, as the publisher's segment is, summed in place over several pieces
    with mmap.mmap(-1, (17 << 20) + 5) as shm:
        shm.write(os.urandom(len(shm)))
        view = memoryview(shm)
        try:
            assert crc32c(view[3:]) == _crc32c_numpy(view[3:])
        finally:
            view.release()
