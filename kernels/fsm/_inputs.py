"""Seeded random bytes, the input most of these kernels take."""

import random


def random_bytes(n: int, seed: int) -> bytes:
    """`n` bytes drawn uniformly from `seed`: the same input on every run."""
    return random.Random(seed).randbytes(n)
