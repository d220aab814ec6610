"""Loop kernels as people write them: every one of these is affine and ingests."""

import math


def lower_triangular_solve(L, b, x):
    """Forward substitution, L x = b, with a scalar accumulator and `A[i][j]` subscripts."""
    n = L.shape[0]
    for i in range(n):
        acc = b[i]
        for j in range(i):
            acc -= L[i][j] * x[j]
        x[i] = acc / L[i][i]


def back_substitution(U, y, x):
    """U x = y from the last row up: loops that count down, a triangle bounded by `i + 1`."""
    n = U.shape[0]
    for i in range(n - 1, -1, -1):
        x[i] = y[i]
        for j in range(i + 1, n):
            x[i] -= U[i, j] * x[j]
        x[i] = x[i] / U[i, i]


def strided_scale(n, alpha, v, out):
    """Even and odd elements scaled differently: loops with a step of 2."""
    for i in range(0, n, 2):
        out[i] = alpha * v[i]
    for i in range(1, n, 2):
        out[i] = -alpha * v[i]


def row_norms(A, norms):
    """Euclidean norm of each row: a reduction into a scalar re-initialised per row, then `math.sqrt`."""
    rows, cols = A.shape
    for i in range(rows):
        total = 0.0
        for j in range(cols):
            total += A[i, j] * A[i, j]
        norms[i] = math.sqrt(total)


def softplus_rows(m, n, X, Y):
    """Elementwise log(1 + exp(x)) on a rectangle, with `min`/`max` bounds clipping the border."""
    for i in range(max(0, 1), min(m, m + 1)):
        for j in range(n):
            Y[i, j] = math.log(1.0 + math.exp(X[i, j]))


def blur_time_steps(steps, n, A, B):
    """A 3-point blur repeated over time: a stencil with a time loop and `A[i][j]`-style indexing."""
    for t in range(steps):
        for i in range(1, n - 1):
            for j in range(1, n - 1):
                B[i][j] = (A[i][j - 1] + A[i][j] + A[i][j + 1]) / 3.0
        for i in range(1, n - 1):
            for j in range(1, n - 1):
                A[i][j] = B[i][j]


def band_matvec(n, A, x, y):
    """y = A x for a band of half-width 2, guarded by affine conditions."""
    for i in range(n):
        y[i] = 0.0
        for j in range(i - 2, i + 3):
            if j >= 0 and j < n:
                y[i] += A[i, j] * x[j]


def clipped_prefix_max(n, v, out):
    """Running maximum with a data-dependent choice in the statement body (not in control flow)."""
    out[0] = v[0]
    for i in range(1, n):
        out[i] = out[i - 1] if out[i - 1] > v[i] else v[i]


def lower_triangle_update(n, alpha, x, C):
    """C += alpha * x x^T on the lower triangle: triangular bounds, every row independent."""
    for i in range(n):
        for j in range(i + 1):
            C[i, j] += alpha * x[i] * x[j]


def scaled_copy(x, y):
    """y = 2 x + 1, bounded by `len(x)` written in the loop itself: no size argument, no `n = ...` line."""
    for i in range(len(x)):
        y[i] = 2.0 * x[i] + 1.0


def column_sums(A, sums):
    """Each column's sum, bounded by `A.shape[1]` and `A.shape[0]` written in the loops themselves."""
    for j in range(A.shape[1]):
        sums[j] = 0.0
        for i in range(A.shape[0]):
            sums[j] += A[i, j]
