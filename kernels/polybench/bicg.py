"""bicg: BiCG sub-kernel, s := A^T*r and q := A*p.

PolyBench/C 4.2.1, linear-algebra/kernels.
"""

import numpy as np

NAME = "bicg"
CATEGORY = "linear-algebra/kernels"
SIZES = {
    "MINI": {"m": 38, "n": 42},
    "SMALL": {"m": 116, "n": 124},
    "MEDIUM": {"m": 390, "n": 410},
    "LARGE": {"m": 1900, "n": 2100},
    "EXTRALARGE": {"m": 1800, "n": 2200},
}


def init(m: int, n: int) -> dict:
    """PolyBench's init_array: p = (i%m)/m, r = (i%n)/n, A = (i*(j+1)%n)/n."""
    i = np.arange(n)[:, None]
    j = np.arange(m)[None, :]
    return {
        "m": m,
        "n": n,
        "A": (i * (j + 1) % n).astype(np.float64) / n,
        "s": np.zeros(m),
        "q": np.zeros(n),
        "p": (np.arange(m) % m).astype(np.float64) / m,
        "r": (np.arange(n) % n).astype(np.float64) / n,
    }


def bicg(m, n, A, s, q, p, r):
    for i in range(m):
        s[i] = 0.0
    for i in range(n):
        q[i] = 0.0
        for j in range(m):
            s[j] = s[j] + r[i] * A[i, j]
            q[i] = q[i] + A[i, j] * p[j]
