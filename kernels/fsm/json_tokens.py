"""json-tokens: the tokens of JSON text as (kind, start, end) spans, checked as JSON's grammar (RFC 8259) spells them.

Kinds are the punctuation itself (`{ } [ ] : ,`) and STRING, NUMBER, TRUE, FALSE, NULL. Whitespace between
tokens is skipped; a malformed token raises ValueError naming its position. It tokenizes and does not
parse: brackets need not match. It accepts only JSON, not the `NaN` and `Infinity` `json.loads` also takes.
"""

import json
import random

NAME = "json-tokens"
CATEGORY = "parsing"
SIZES = {
    "MINI": {"n": 2},
    "SMALL": {"n": 50},
    "MEDIUM": {"n": 1_000},
    "LARGE": {"n": 8_000},
    "EXTRALARGE": {"n": 40_000},
}

STRING = "string"
NUMBER = "number"
TRUE = "true"
FALSE = "false"
NULL = "null"
PUNCTUATION = "{}[]:,"
WHITESPACE = " \t\n\r"
DIGITS = "0123456789"
HEX_DIGITS = "0123456789abcdefABCDEF"
ESCAPED = '"\\/bfnrtu'
LITERALS = {"t": TRUE, "f": FALSE, "n": NULL}


def init(n: int) -> dict:
    """A JSON array of `n` records: strings with escapes and non-ASCII text, integers, floats, booleans, nulls."""
    rng = random.Random(8259)
    records = [
        {
            "id": k,
            "name": rng.choice(("Ada", 'say "hi"', "tab\there", "Grüße", "日本", "back\\slash")),
            "score": rng.uniform(-1e6, 1e6),
            "tags": [rng.choice((True, False, None)) for _ in range(3)],
            "nested": {"depth": rng.randrange(10), "ratio": rng.random() / 1e9},
        }
        for k in range(n)
    ]
    return {"text": json.dumps(records, indent=1)}


def json_tokens(text):
    tokens = []
    i = 0
    n = len(text)
    while i < n:
        c = text[i]
        if c in WHITESPACE:
            i += 1
        elif c in PUNCTUATION:
            tokens.append((c, i, i + 1))
            i += 1
        elif c == '"':
            end = _string_end(text, i)
            tokens.append((STRING, i, end))
            i = end
        elif c == "-" or c in DIGITS:
            end = _number_end(text, i)
            tokens.append((NUMBER, i, end))
            i = end
        elif c in LITERALS:
            word = LITERALS[c]
            if text[i : i + len(word)] != word:
                raise ValueError(f"invalid literal at {i}: expected {word}")
            tokens.append((word, i, i + len(word)))
            i += len(word)
        else:
            raise ValueError(f"unexpected character {c!r} at {i}")
    return tokens


def _string_end(text, start):
    i = start + 1
    n = len(text)
    while i < n:
        c = text[i]
        if c == '"':
            return i + 1
        if c == "\\":
            if i + 1 >= n or text[i + 1] not in ESCAPED:
                raise ValueError(f"invalid escape at {i}")
            if text[i + 1] == "u":
                for k in range(i + 2, i + 6):
                    if k >= n or text[k] not in HEX_DIGITS:
                        raise ValueError(f"invalid \\u escape at {i}")
                i += 6
            else:
                i += 2
        elif c < " ":
            raise ValueError(f"control character {c!r} in string at {i}")
        else:
            i += 1
    raise ValueError(f"unterminated string starting at {start}")


def _number_end(text, start):
    # -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?, then no digit: 01 is not two numbers but an error.
    i = start
    n = len(text)
    if text[i] == "-":
        i += 1
    if i < n and text[i] == "0":
        i += 1
        if i < n and text[i] in DIGITS:
            raise ValueError(f"leading zero in number at {start}")
    elif i < n and text[i] in DIGITS:
        while i < n and text[i] in DIGITS:
            i += 1
    else:
        raise ValueError(f"number without digits at {start}")
    if i < n and text[i] == ".":
        i += 1
        if i >= n or text[i] not in DIGITS:
            raise ValueError(f"number without digits after the point at {start}")
        while i < n and text[i] in DIGITS:
            i += 1
    if i < n and text[i] in "eE":
        i += 1
        if i < n and text[i] in "+-":
            i += 1
        if i >= n or text[i] not in DIGITS:
            raise ValueError(f"number without digits in the exponent at {start}")
        while i < n and text[i] in DIGITS:
            i += 1
    return i
