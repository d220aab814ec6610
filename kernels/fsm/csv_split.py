"""csv-split: records and fields of CSV text in Excel's dialect, as `csv.reader` reads it from a file opened with
`newline=''`.

Commas separate fields and `\\r`, `\\n` or `\\r\\n` end records; a field that starts with a double quote runs to
the closing quote, taking commas, line breaks and doubled quotes (`""` for `"`) inside it. Like the csv module
when not strict, anything after a closing quote joins the field, a quote inside an unquoted field is an
ordinary character, an empty line is an empty record, and text that ends inside quotes ends the field there.
"""

import random

NAME = "csv-split"
CATEGORY = "parsing"
SIZES = {
    "MINI": {"n": 4},
    "SMALL": {"n": 200},
    "MEDIUM": {"n": 5_000},
    "LARGE": {"n": 40_000},
    "EXTRALARGE": {"n": 200_000},
}

START_RECORD = 0
START_FIELD = 1
IN_FIELD = 2
IN_QUOTED_FIELD = 3
QUOTE_IN_QUOTED_FIELD = 4

WORDS = ("alpha", "beta", "12.5", "-3", "", "x y", "a,b", 'say "hi"', "two\nlines", "crlf\r\nend", " padded ")


def init(n: int) -> dict:
    """`n` records of five fields, quoted where a field needs it, with `\\r\\n` or `\\n` line ends and empty lines."""
    rng = random.Random(4180)
    lines = []
    for _ in range(n):
        fields = []
        for _ in range(5):
            word = rng.choice(WORDS)
            if any(c in word for c in ',"\r\n') or rng.random() < 0.2:
                word = '"' + word.replace('"', '""') + '"'
            fields.append(word)
        lines.append(",".join(fields) + rng.choice(("\r\n", "\n", "\n\n")))
    return {"text": "".join(lines)}


def csv_split(text):
    rows = []
    fields = []
    field = []
    state = START_RECORD
    i = 0
    n = len(text)
    while i < n:
        c = text[i]
        i += 1
        if c == "\r" or c == "\n":
            if state == IN_QUOTED_FIELD:
                field.append(c)
                continue
            if state != START_RECORD:
                fields.append("".join(field))
                field = []
            # \r\n is one line end; each other \r or \n ends a record of its own, an empty one on an empty line.
            if c == "\r" and i < n and text[i] == "\n":
                i += 1
            rows.append(fields)
            fields = []
            state = START_RECORD
        elif state in (START_RECORD, START_FIELD):
            if c == '"':
                state = IN_QUOTED_FIELD
            elif c == ",":
                fields.append("")
                state = START_FIELD
            else:
                field.append(c)
                state = IN_FIELD
        elif state == IN_FIELD:
            if c == ",":
                fields.append("".join(field))
                field = []
                state = START_FIELD
            else:
                field.append(c)
        elif state == IN_QUOTED_FIELD:
            if c == '"':
                state = QUOTE_IN_QUOTED_FIELD
            else:
                field.append(c)
        elif c == '"':  # QUOTE_IN_QUOTED_FIELD: a doubled quote stands for one
            field.append(c)
            state = IN_QUOTED_FIELD
        elif c == ",":
            fields.append("".join(field))
            field = []
            state = START_FIELD
        else:
            field.append(c)
            state = IN_FIELD
    if state != START_RECORD:
        fields.append("".join(field))
        rows.append(fields)
    return rows
