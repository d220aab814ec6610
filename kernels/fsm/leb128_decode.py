"""leb128-decode: a buffer of unsigned LEB128 varints (protobuf's and WebAssembly's encoding) back to integers.

Each byte gives seven bits, least significant group first; a set high bit means another byte follows. A
varint cut off by the end of the buffer, or one holding more than 64 bits, raises ValueError.
"""

import random

NAME = "leb128-decode"
CATEGORY = "decoding"
SIZES = {
    "MINI": {"n": 8},
    "SMALL": {"n": 1_000},
    "MEDIUM": {"n": 20_000},
    "LARGE": {"n": 300_000},
    "EXTRALARGE": {"n": 1_500_000},
}

MAX_SHIFT = 63
"""The shift of the tenth byte, the last a 64-bit value needs; only its lowest bit may still be set."""


def init(n: int) -> dict:
    """`n` varints of random bit lengths from 1 to 64, so that encodings of 1 to 10 bytes all occur."""
    rng = random.Random(128)
    out = bytearray()
    for _ in range(n):
        value = rng.getrandbits(rng.randrange(1, 65))
        while value >= 0x80:
            out.append(value & 0x7F | 0x80)
            value >>= 7
        out.append(value)
    return {"data": bytes(out)}


def leb128_decode(data):
    values = []
    i = 0
    n = len(data)
    while i < n:
        start = i
        value = 0
        shift = 0
        while True:
            if i >= n:
                raise ValueError(f"truncated varint at byte {start}")
            byte = data[i]
            i += 1
            if shift == MAX_SHIFT and byte > 1:
                raise ValueError(f"varint at byte {start} does not fit in 64 bits")
            value |= (byte & 0x7F) << shift
            if byte < 0x80:
                break
            shift += 7
        values.append(value)
    return values
