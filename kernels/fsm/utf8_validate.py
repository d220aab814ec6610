"""utf8-validate: where the first ill-formed UTF-8 sequence starts, or -1 if all of it is well-formed UTF-8.

Well-formed as the Unicode standard (table 3-7) and Python's decoder define it: no overlong forms, no
surrogates, nothing above U+10FFFF, no sequence cut short. The index is where `bytes.decode('utf-8')`
reports its error (`UnicodeDecodeError.start`).
"""

import random

NAME = "utf8-validate"
CATEGORY = "parsing"
SIZES = {
    "MINI": {"n": 16},
    "SMALL": {"n": 2_000},
    "MEDIUM": {"n": 200_000},
    "LARGE": {"n": 4_000_000},
    "EXTRALARGE": {"n": 20_000_000},
}

SAMPLE = "plain ASCII, Grüße, Ελληνικά, 日本語テキスト, emoji 🎉🐍 and math 𝔸𝔹ℂ; "
"""Characters of every encoded length (one to four bytes), for inputs that are valid up to their end."""


def init(n: int) -> dict:
    """About `n` bytes of valid UTF-8 mixing one- to four-byte characters, so that all of it is read."""
    rng = random.Random(8)
    text = "".join(rng.choice(SAMPLE) for _ in range(n * 3 // 5))  # 1.6 bytes a character on average
    return {"data": text.encode("utf-8")}


def utf8_validate(data):
    i = 0
    n = len(data)
    while i < n:
        lead = data[i]
        if lead < 0x80:
            i += 1
            continue
        # The range the second byte must fall in, which rules out overlong forms, surrogates and values
        # beyond U+10FFFF, and how many continuation bytes follow the lead.
        if 0xC2 <= lead <= 0xDF:
            low, high, follow = 0x80, 0xBF, 1
        elif lead == 0xE0:
            low, high, follow = 0xA0, 0xBF, 2
        elif 0xE1 <= lead <= 0xEC or 0xEE <= lead <= 0xEF:
            low, high, follow = 0x80, 0xBF, 2
        elif lead == 0xED:
            low, high, follow = 0x80, 0x9F, 2
        elif lead == 0xF0:
            low, high, follow = 0x90, 0xBF, 3
        elif 0xF1 <= lead <= 0xF3:
            low, high, follow = 0x80, 0xBF, 3
        elif lead == 0xF4:
            low, high, follow = 0x80, 0x8F, 3
        else:
            return i
        if i + 1 >= n or not low <= data[i + 1] <= high:
            return i
        k = 2
        while k <= follow:
            if i + k >= n or not 0x80 <= data[i + k] <= 0xBF:
                return i
            k += 1
        i += follow + 1
    return -1
