"""ludcmp: LU decomposition then forward and back substitution solving A*x = b. PolyBench/C 4.2.1, linear-algebra/solvers."""

import numpy as np

NAME = "ludcmp"
CATEGORY = "linear-algebra/solvers"
SIZES = {
    "MINI": {"n": 40},
    "SMALL": {"n": 120},
    "MEDIUM": {"n": 400},
    "LARGE": {"n": 2000},
    "EXTRALARGE": {"n": 4000},
}


def init(n: int) -> dict:
    """PolyBench's init_array: x = y = 0, b[i] = (i+1)/n/2.0 + 4, and A as in cholesky:
    lower-triangular L with L[i][j] = (-j % n)/n + 1 (C remainder) for j < i, L[i][i] = 1;
    A = L*L^T. L's columns are constant below the diagonal, so the C's t-ascending sums reduce
    to one prefix sum (bit-identical, O(n^2))."""
    c = np.fmod(-np.arange(n), n).astype(np.float64) / n + 1  # L[i][j] for every row i > j
    # B[r][s] += L[r][t]*L[s][t] for t = 0, 1, ...: with S[s] = c[0]^2 + ... + c[s-1]^2 summed
    # left to right (cumsum is sequential), A[r][s] = S[s] + c[s] for r > s, A[s][s] = S[s] + 1.
    S = np.concatenate(([0.0], np.cumsum(c * c)[:-1]))
    A = np.tril(np.broadcast_to(S + c, (n, n)), -1)
    A = A + A.T
    np.fill_diagonal(A, S + 1)
    b = (np.arange(n) + 1).astype(np.float64) / float(n) / 2.0 + 4
    return {"n": n, "A": A, "b": b, "x": np.zeros(n), "y": np.zeros(n)}


def ludcmp(n, A, b, x, y):
    for i in range(n):
        for j in range(i):
            w = A[i, j]
            for k in range(j):
                w -= A[i, k] * A[k, j]
            A[i, j] = w / A[j, j]
        for j in range(i, n):
            w = A[i, j]
            for k in range(i):
                w -= A[i, k] * A[k, j]
            A[i, j] = w
    for i in range(n):
        w = b[i]
        for j in range(i):
            w -= A[i, j] * y[j]
        y[i] = w
    for i in range(n - 1, -1, -1):
        w = y[i]
        for j in range(i + 1, n):
            w -= A[i, j] * x[j]
        x[i] = w / A[i, i]
