"""crc16-ccitt: the CRC-16/CCITT-FALSE checksum, bit by bit (polynomial 0x1021, initial value 0xFFFF, MSB first)."""

from kernels.fsm._inputs import random_bytes

NAME = "crc16-ccitt"
CATEGORY = "checksums"
SIZES = {
    "MINI": {"n": 16},
    "SMALL": {"n": 1_000},
    "MEDIUM": {"n": 20_000},
    "LARGE": {"n": 200_000},
    "EXTRALARGE": {"n": 1_000_000},
}

POLY = 0x1021


def init(n: int) -> dict:
    """`n` random bytes."""
    return {"data": random_bytes(n, seed=16)}


def crc16_ccitt(data, crc=0xFFFF):
    for byte in data:
        crc ^= byte << 8
        for _ in range(8):
            if crc & 0x8000:
                crc = ((crc << 1) ^ POLY) & 0xFFFF
            else:
                crc = (crc << 1) & 0xFFFF
    return crc
