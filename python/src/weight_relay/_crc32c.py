"""CRC32C (Castagnoli), the checksum every part of the relay uses (Java's ``java.util.zip.CRC32C``,
the data plane's SSE4.2 sum): reflected polynomial 0x82F63B78, initial value and final xor
0xFFFFFFFF.

The publisher sums every tensor it stages, so this runs over the whole model on every publish. It
uses ``google-crc32c`` (a declared dependency: Google's C library, SSE4.2, about 3.7 GB/s on the
lab machine) in 8 MiB pieces: its C function takes only read-only bytes, so each piece of a writable
buffer (the shared segment's map) is copied once, in cache, before it is summed. When that package
is missing or is its pure-Python build, the bytes are summed with numpy (a logged warning says so;
about 17 MB/s): many lanes at once, four table lookups per lane and step, and the lanes' sums joined
as zlib's ``crc32_combine`` does (shift-by-zeros operators over GF(2)).
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np

_google_crc32c: Any
try:
    import google_crc32c as _google_crc32c
except ImportError:  # the test venv has it; the warning below says what is slow without it
    _google_crc32c = None

_log = logging.getLogger("weight_relay.crc32c")
#: "c" when the hardware CRC32C of google-crc32c sums the bytes, "numpy" for the fallback.
IMPLEMENTATION = (
    "c" if _google_crc32c is not None and _google_crc32c.implementation == "c" else "numpy")
if IMPLEMENTATION != "c":
    _log.warning("google-crc32c's C build is not installed: CRC32C runs in numpy at about 17 MB/s "
                 "(pip install google-crc32c)")
_PIECE = 8 << 20

_POLY = 0x82F63B78
_LANES = 1 << 14


def _tables() -> np.ndarray:
    t = np.zeros((4, 256), dtype=np.uint32)
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ (_POLY if c & 1 else 0)
        t[0, i] = c
    for k in range(1, 4):
        prev = t[k - 1]
        t[k] = (prev >> 8) ^ t[0][prev & 0xFF]
    return t


_T = _tables()
_T0 = [int(x) for x in _T[0]]


def _raw_bytes(reg: int, data: bytes | memoryview) -> int:
    for b in bytes(data):
        reg = (reg >> 8) ^ _T0[(reg ^ b) & 0xFF]
    return reg


def _mat_times(mat: list[int], vec: int) -> int:
    out = 0
    i = 0
    while vec:
        if vec & 1:
            out ^= mat[i]
        vec >>= 1
        i += 1
    return out


def _mat_square(mat: list[int]) -> list[int]:
    return [_mat_times(mat, mat[n]) for n in range(32)]


def _zeros_operator(nbytes: int) -> list[int]:
    """The 32x32 GF(2) matrix (columns as ints) that feeds ``nbytes`` zero bytes into a register."""
    odd = [_POLY] + [1 << (n - 1) for n in range(1, 32)]  # one zero bit
    even = _mat_square(odd)  # two zero bits
    odd = _mat_square(even)  # four zero bits
    result = [1 << n for n in range(32)]  # identity
    n = nbytes
    while n:
        even = _mat_square(odd)  # first pass: one zero byte
        if n & 1:
            result = [_mat_times(even, c) for c in result]
        n >>= 1
        if not n:
            break
        odd = _mat_square(even)
        if n & 1:
            result = [_mat_times(odd, c) for c in result]
        n >>= 1
    return result


def _apply_many(mat: list[int], regs: np.ndarray) -> np.ndarray:
    out = np.zeros_like(regs)
    for bit in range(32):
        out ^= np.where((regs >> np.uint32(bit)) & np.uint32(1), np.uint32(mat[bit]), np.uint32(0))
    return out


def crc32c(data: Any) -> int:
    """The CRC32C of ``data`` (anything exposing the buffer protocol, contiguous), as an int."""
    view = memoryview(data).cast("B")
    if IMPLEMENTATION == "c":
        assert _google_crc32c is not None
        crc = 0
        for at in range(0, len(view), _PIECE):
            crc = _google_crc32c.extend(crc, bytes(view[at:at + _PIECE]))
        return int(crc)
    return _crc32c_numpy(view)


def _crc32c_numpy(view: memoryview) -> int:
    n = len(view)
    lane = (n // _LANES) // 4 * 4
    reg = 0xFFFFFFFF
    done = 0
    if lane >= 64:
        words = np.frombuffer(view[: lane * _LANES], dtype="<u4").reshape(_LANES, lane // 4)
        regs = np.zeros(_LANES, dtype=np.uint32)
        t0, t1, t2, t3 = _T[0], _T[1], _T[2], _T[3]
        mask = np.uint32(0xFF)
        for j in range(lane // 4):
            x = regs ^ words[:, j]
            regs = (t3[x & mask] ^ t2[(x >> np.uint32(8)) & mask]
                    ^ t1[(x >> np.uint32(16)) & mask] ^ t0[x >> np.uint32(24)])
        # join the lanes pairwise: raw(A || B) = zeros(len B)(raw A) ^ raw B
        span = lane
        while len(regs) > 1:
            op = _zeros_operator(span)
            regs = _apply_many(op, regs[0::2]) ^ regs[1::2]
            span *= 2
        done = lane * _LANES
        reg = _mat_times(_zeros_operator(done), reg) ^ int(regs[0])
    reg = _raw_bytes(reg, view[done:])
    return reg ^ 0xFFFFFFFF


def format_crc32c(value: int) -> str:
    """``crc32c:xxxxxxxx``, the contracts' checksum format."""
    return f"crc32c:{value & 0xFFFFFFFF:08x}"
