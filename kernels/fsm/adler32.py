"""adler32: zlib's Adler-32 checksum, two running sums modulo 65521, reduced once per block as zlib does."""

from kernels.fsm._inputs import random_bytes

NAME = "adler32"
CATEGORY = "checksums"
SIZES = {
    "MINI": {"n": 16},
    "SMALL": {"n": 10_000},
    "MEDIUM": {"n": 200_000},
    "LARGE": {"n": 2_000_000},
    "EXTRALARGE": {"n": 10_000_000},
}

MOD_ADLER = 65521
BLOCK = 5552
"""The most bytes after which `b` still fits in 32 bits unreduced: the reduction can wait that long."""


def init(n: int) -> dict:
    """`n` random bytes."""
    return {"data": random_bytes(n, seed=65521)}


def adler32(data, value=1):
    a = value & 0xFFFF
    b = (value >> 16) & 0xFFFF
    i = 0
    n = len(data)
    while i < n:
        end = min(i + BLOCK, n)
        while i < end:
            a += data[i]
            b += a
            i += 1
        a %= MOD_ADLER
        b %= MOD_ADLER
    return (b << 16) | a
