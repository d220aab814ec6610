"""run-length-decode: PDF's RunLengthDecode filter (PDF 32000-1, 7.4.5).

A length byte L from 0 to 127 is followed by L + 1 bytes copied as they are; L from 129 to 255 by one
byte repeated 257 - L times; 128 marks the end of the data and anything after it is ignored. Data that
stops without the end marker is decoded up to where it stops; a run cut short raises ValueError.
"""

import random

NAME = "run-length-decode"
CATEGORY = "decoding"
SIZES = {
    "MINI": {"n": 4},
    "SMALL": {"n": 500},
    "MEDIUM": {"n": 10_000},
    "LARGE": {"n": 200_000},
    "EXTRALARGE": {"n": 1_000_000},
}

EOD = 128


def init(n: int) -> dict:
    """`n` runs, literal and repeated, of random lengths, then the end marker and bytes after it."""
    rng = random.Random(7405)
    out = bytearray()
    for _ in range(n):
        if rng.random() < 0.5:
            count = rng.randrange(1, 129)
            out.append(count - 1)
            out += rng.randbytes(count)
        else:
            out.append(257 - rng.randrange(2, 129))
            out.append(rng.randrange(256))
    out += bytes((EOD, 1, 2, 3))
    return {"data": bytes(out)}


def run_length_decode(data):
    out = bytearray()
    i = 0
    n = len(data)
    while i < n:
        length = data[i]
        i += 1
        if length == EOD:
            break
        elif length < EOD:
            end = i + length + 1
            if end > n:
                raise ValueError(f"literal run at byte {i - 1} needs {length + 1} bytes, {n - i} left")
            while i < end:
                out.append(data[i])
                i += 1
        else:
            if i >= n:
                raise ValueError(f"repeat run at byte {i - 1} has no byte to repeat")
            byte = data[i]
            i += 1
            for _ in range(257 - length):
                out.append(byte)
    return out
