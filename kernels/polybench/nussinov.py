"""nussinov: Nussinov dynamic program for RNA secondary structure (maximum base pairing). PolyBench/C 4.2.1, medley."""

import numpy as np

NAME = "nussinov"
CATEGORY = "medley"
SIZES = {
    "MINI": {"n": 60},
    "SMALL": {"n": 180},
    "MEDIUM": {"n": 500},
    "LARGE": {"n": 2500},
    "EXTRALARGE": {"n": 5500},
}


def init(n: int) -> dict:
    """PolyBench's init_array: seq[i] = (i+1) % 4 (a char array in C, int32 here), table = 0
    (int32)."""
    seq = ((np.arange(n) + 1) % 4).astype(np.int32)
    return {"n": n, "seq": seq, "table": np.zeros((n, n), dtype=np.int32)}


def nussinov(n, seq, table):
    # PolyBench's macros: match(b1, b2) is (b1 + b2 == 3 ? 1 : 0), max_score(s1, s2) is max.
    for i in range(n - 1, -1, -1):
        for j in range(i + 1, n):
            if j - 1 >= 0:
                table[i, j] = max(table[i, j], table[i, j - 1])
            if i + 1 < n:
                table[i, j] = max(table[i, j], table[i + 1, j])
            if j - 1 >= 0 and i + 1 < n:
                # don't allow adjacent elements to bond (the C's if/else, as two ifs)
                if i < j - 1:
                    table[i, j] = max(table[i, j], table[i + 1, j - 1] + (1 if seq[i] + seq[j] == 3 else 0))
                if i >= j - 1:
                    table[i, j] = max(table[i, j], table[i + 1, j - 1])
            for k in range(i + 1, j):
                table[i, j] = max(table[i, j], table[i, k] + table[k + 1, j])
