"""crc32: the CRC-32 of zlib and PNG, bit by bit (reflected polynomial 0xEDB88320, inverted in and out)."""

from kernels.fsm._inputs import random_bytes

NAME = "crc32"
CATEGORY = "checksums"
SIZES = {
    "MINI": {"n": 16},
    "SMALL": {"n": 1_000},
    "MEDIUM": {"n": 20_000},
    "LARGE": {"n": 200_000},
    "EXTRALARGE": {"n": 1_000_000},
}

POLY = 0xEDB88320


def init(n: int) -> dict:
    """`n` random bytes."""
    return {"data": random_bytes(n, seed=32)}


def crc32(data, crc=0):
    # `crc` continues an earlier checksum, as zlib.crc32's second argument does: the inversion undoes the last one.
    crc ^= 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            if crc & 1:
                crc = (crc >> 1) ^ POLY
            else:
                crc >>= 1
    return crc ^ 0xFFFFFFFF
