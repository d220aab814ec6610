"""luhn: the Luhn (mod 10) check digit test over a batch of card-like numbers.

From the rightmost digit, every second digit is doubled, and a doubled digit above 9 loses 9; the number
passes if the sum is a multiple of 10. The result holds 1 or 0 per number; an empty number or one with a
character other than an ASCII digit raises ValueError.
"""

import random

NAME = "luhn"
CATEGORY = "checksums"
SIZES = {
    "MINI": {"n": 4},
    "SMALL": {"n": 500},
    "MEDIUM": {"n": 10_000},
    "LARGE": {"n": 100_000},
    "EXTRALARGE": {"n": 500_000},
}


def init(n: int) -> dict:
    """`n` random digit strings of 12 to 19 digits, about a tenth of which pass."""
    rng = random.Random(1954)
    numbers = ["".join(rng.choice("0123456789") for _ in range(rng.randrange(12, 20))) for _ in range(n)]
    return {"numbers": numbers}


def luhn(numbers):
    valid = bytearray(len(numbers))
    for k, number in enumerate(numbers):
        if not number:
            raise ValueError(f"number {k} is empty")
        total = 0
        double = False
        i = len(number) - 1
        while i >= 0:
            digit = ord(number[i]) - 48
            if digit < 0 or digit > 9:
                raise ValueError(f"number {k} has a non-digit {number[i]!r} at {i}")
            if double:
                digit *= 2
                if digit > 9:
                    digit -= 9
            total += digit
            double = not double
            i -= 1
        if total % 10 == 0:
            valid[k] = 1
    return valid
