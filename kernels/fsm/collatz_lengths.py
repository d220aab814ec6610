"""collatz-lengths: how many steps of the Collatz map (n/2 if n is even, 3n + 1 if odd) take each start to 1.

A start below 1 never reaches 1 and raises ValueError.
"""

NAME = "collatz-lengths"
CATEGORY = "integer-sequences"
SIZES = {
    "MINI": {"count": 10},
    "SMALL": {"count": 500},
    "MEDIUM": {"count": 5_000},
    "LARGE": {"count": 30_000},
    "EXTRALARGE": {"count": 150_000},
}


def init(count: int) -> dict:
    """The starts 1 to `count`."""
    return {"start": 1, "count": count}


def collatz_lengths(start, count):
    if start < 1:
        raise ValueError(f"Collatz starts must be positive, got {start}")
    lengths = []
    for n in range(start, start + count):
        steps = 0
        while n != 1:
            if n & 1:
                n = 3 * n + 1
            else:
                n >>= 1
            steps += 1
        lengths.append(steps)
    return lengths
