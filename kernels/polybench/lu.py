"""lu: LU decomposition without pivoting, in place (unit-lower L and U share A). PolyBench/C 4.2.1, linear-algebra/solvers."""

import numpy as np

NAME = "lu"
CATEGORY = "linear-algebra/solvers"
SIZES = {
    "MINI": {"n": 40},
    "SMALL": {"n": 120},
    "MEDIUM": {"n": 400},
    "LARGE": {"n": 2000},
    "EXTRALARGE": {"n": 4000},
}


def init(n: int) -> dict:
    """PolyBench's init_array (same as cholesky's): lower-triangular L with
    L[i][j] = (-j % n)/n + 1 (C remainder) for j < i, L[i][i] = 1; then A = L*L^T. L's columns
    are constant below the diagonal, so the C's t-ascending sums reduce to one prefix sum
    (bit-identical, O(n^2))."""
    c = np.fmod(-np.arange(n), n).astype(np.float64) / n + 1  # L[i][j] for every row i > j
    # B[r][s] += L[r][t]*L[s][t] for t = 0, 1, ...: with S[s] = c[0]^2 + ... + c[s-1]^2 summed
    # left to right (cumsum is sequential), A[r][s] = S[s] + c[s] for r > s, A[s][s] = S[s] + 1.
    S = np.concatenate(([0.0], np.cumsum(c * c)[:-1]))
    A = np.tril(np.broadcast_to(S + c, (n, n)), -1)
    A = A + A.T
    np.fill_diagonal(A, S + 1)
    return {"n": n, "A": A}


def lu(n, A):
    for i in range(n):
        for j in range(i):
            for k in range(j):
                A[i, j] -= A[i, k] * A[k, j]
            A[i, j] /= A[j, j]
        for j in range(i, n):
            for k in range(i):
                A[i, j] -= A[i, k] * A[k, j]
