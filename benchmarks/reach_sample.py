"""Numeric functions written the way people write them, for `benchmarks/reach.py`.

Each is plain, runnable Python in one of the styles real code comes in: argument checks at
entry, `np.asarray` of arguments, defaults, shapes kept in variables, sizes from local
constants, tuple unpacking, `with np.errstate`, names imported from NumPy, helpers that
write into their arguments, loops over `enumerate`/`zip`/rows, masks, statistics. None is
rewritten for the engine: `ARGS` gives each the `--arg` specs a user would pass.
"""

import math

import numpy as np
from numpy import empty_like, exp, sqrt

ARGS: dict[str, list[str]] = {
    "checked_axpy": ["a=1.5", "x=f64[4096]", "y=f64[4096]"],
    "scaled_distance": ["p=f64[256,3]", "q=f64[256,3]"],
    "blur_shape_in_variable": ["img=f64[200,300]"],
    "blur_unpacked_shape": ["img=f32[200,300]"],
    "safe_ratio": ["a=f64[1000]", "b=f64[1000]"],
    "normalize_columns": ["X=f64[300,40]"],
    "clip_norm": ["v=f64[2048]"],
    "softplus_imported": ["x=f64[512,512]"],
    "grid_poisson": ["f=f64[64,64]"],
    "mean_by_size": ["x=f64[5000]"],
    "relative_change": ["old=f64[1000]", "new=f64[1000]"],
    "smooth_with_helper": ["u=f64[128,128]", "steps=4"],
    "set_boundaries": ["x=f64[66,66]"],
    "assert_same_shape": ["a=f64[100,100]", "b=f64[100,100]"],
    "builtin_sum": ["x=f64[3000]"],
    "rows_mean_len": ["m=f64[120,80]"],
    "laplace_double_buffer": ["u=f64[64,64]", "steps=6"],
    "scalar_alias": ["x=f64[200]", "k=3"],
    "kde_enumerate": ["samples=f64[300]", "grid=f64[200]"],
    "dot_zip": ["x=f64[5000]", "y=f64[5000]"],
    "back_substitution": ["U=f64[64,64]", "b=f64[64]"],
    "lennard_jones": ["pos=f64[120,3]"],
    "zero_negatives": ["a=f64[400,400]"],
    "sample_variance": ["x=f64[300,50]"],
    "weighted_mean": ["x=f64[2000]", "w=f64[2000]"],
    "running_total": ["x=f64[4000]"],
    "pairwise_numba_style": ["X=f64[200,16]"],
    "local_constant_grid": [],
    "none_check": ["x=f64[1000]"],
    "ndim_dispatch": ["x=f64[300,200]"],
    "lambda_in_body": ["x=f64[1000]"],
    "inner_def": ["x=f64[800]"],
    "import_in_body": ["x=f64[800]"],
    "swapped_scalars": ["n=30"],
    "row_loop": ["A=f64[100,60]"],
}


def checked_axpy(a, x, y):
    if len(x) != len(y):
        raise ValueError("x and y must have the same length")
    return a * x + y


def scaled_distance(p, q):
    p = np.asarray(p)
    q = np.asanyarray(q)
    d = p - q
    return np.sqrt(np.sum(d * d, axis=1))


def blur_shape_in_variable(img):
    sx = img.shape
    out = np.zeros_like(img)
    for i in range(1, sx[0] - 1):
        for j in range(1, sx[1] - 1):
            out[i, j] = 0.2 * (img[i, j] + img[i - 1, j] + img[i + 1, j] + img[i, j - 1] + img[i, j + 1])
    return out


def blur_unpacked_shape(img):
    h, w = img.shape
    out = np.empty((h - 2, w - 2), dtype=img.dtype)
    for y in range(h - 2):
        for x in range(w - 2):
            out[y, x] = (img[y, x + 1] + img[y + 2, x + 1] + img[y + 1, x] + img[y + 1, x + 2]) * 0.25
    return out


def safe_ratio(a, b):
    with np.errstate(divide="ignore", invalid="ignore"):
        r = a / b
    return np.where(b > 0.75, r, 0.0)


def normalize_columns(X):
    mu = X.mean(axis=0)
    centered = X - mu
    scale = np.sqrt((centered**2).mean(axis=0))
    return centered / scale


def clip_norm(v, max_norm=1.0, eps=1e-12):
    norm = np.sqrt(np.sum(v * v))
    return v * (max_norm / (norm + eps))


def softplus_imported(x):
    return np.log(1.0 + exp(-np.abs(x))) + np.maximum(x, 0.0)


def grid_poisson(f):
    n = f.shape[0]
    u = np.zeros((n, n))
    h2 = 1.0 / ((n - 1) * (n - 1))
    for it in range(20):
        u[1:-1, 1:-1] = 0.25 * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:] - h2 * f[1:-1, 1:-1])
    return u


def mean_by_size(x):
    return x.sum() / x.size


def relative_change(old, new):
    out = empty_like(old)
    out[:] = (new - old) / sqrt(old * old + 1e-9)
    return out


def _jacobi_sweep(u, v):
    v[1:-1, 1:-1] = 0.25 * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:])


def smooth_with_helper(u, steps):
    v = u.copy()
    for t in range(steps):
        _jacobi_sweep(u, v)
        _jacobi_sweep(v, u)
    return u


def _set_bnd(n, x):
    for i in range(1, n + 1):
        x[0, i] = x[1, i]
        x[n + 1, i] = x[n, i]
        x[i, 0] = x[i, 1]
        x[i, n + 1] = x[i, n]


def set_boundaries(x):
    n = x.shape[0] - 2
    _set_bnd(n, x)


def assert_same_shape(a, b):
    assert a.shape == b.shape
    return a * b - b


def builtin_sum(x):
    return sum(x) / len(x)


def rows_mean_len(m):
    rows, cols = len(m), len(m[0])
    out = np.zeros(rows)
    for i in range(rows):
        for j in range(cols):
            out[i] += m[i, j]
        out[i] /= cols
    return out


def laplace_double_buffer(u, steps):
    a = u.copy()
    b = u.copy()
    for t in range(steps):
        b[1:-1, 1:-1] = 0.25 * (a[:-2, 1:-1] + a[2:, 1:-1] + a[1:-1, :-2] + a[1:-1, 2:])
        a, b = b, a
    return a


def scalar_alias(x, k):
    a5 = k
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        out[i] = x[i] * a5 + 1.0
    return out


def kde_enumerate(samples, grid):
    density = np.zeros_like(grid)
    for i, g in enumerate(grid):
        density[i] = np.sum(np.exp(-0.5 * (samples - g) ** 2))
    return density / (len(samples) * math.sqrt(2 * math.pi))


def dot_zip(x, y):
    total = 0.0
    for a, b in zip(x, y):
        total += a * b
    return total


def back_substitution(U, b):
    n = len(b)
    x = np.zeros(n)
    for i in reversed(range(n)):
        s = b[i]
        for j in range(i + 1, n):
            s -= U[i, j] * x[j]
        x[i] = s / (U[i, i] + n)
    return x


def lennard_jones(pos):
    n = pos.shape[0]
    energy = 0.0
    for i in range(n):
        for j in range(i + 1, n):
            dx = pos[i, 0] - pos[j, 0]
            dy = pos[i, 1] - pos[j, 1]
            dz = pos[i, 2] - pos[j, 2]
            r2 = dx * dx + dy * dy + dz * dz + 0.5
            inv6 = 1.0 / (r2 * r2 * r2)
            energy += 4.0 * (inv6 * inv6 - inv6)
    return energy


def zero_negatives(a):
    b = a - 1.0
    b[b < 0] = 0.0
    return b


def sample_variance(x):
    return x.var(axis=0)


def weighted_mean(x, w):
    return np.average(x, weights=w)


def running_total(x):
    return np.cumsum(x)


def pairwise_numba_style(X):
    M, N = X.shape
    D = np.empty((M, M), dtype=np.float64)
    for i in range(M):
        for j in range(M):
            d = 0.0
            for k in range(N):
                tmp = X[i, k] - X[j, k]
                d += tmp * tmp
            D[i, j] = np.sqrt(d)
    return D


def local_constant_grid():
    n = 48
    U = np.zeros((n + 2, n + 2))
    for i in range(1, n + 1):
        for j in range(1, n + 1):
            U[i, j] = (i * j) % 7 + 0.5
    return U


def none_check(x, out=None):
    if out is None:
        out = np.empty_like(x)
    out[:] = np.tanh(x)
    return out


def ndim_dispatch(x):
    if x.ndim != 2:
        raise ValueError("x must be a matrix")
    return x.T @ x


def lambda_in_body(x):
    sq = lambda v: v * v
    return sq(x) + 1.0


def inner_def(x):
    def sigmoid(v):
        return 1.0 / (1.0 + np.exp(-v))

    return sigmoid(x) * x


def import_in_body(x):
    import numpy as xp

    return xp.sqrt(x) + xp.log(x)


def swapped_scalars(n):
    a, b = 0.0, 1.0
    out = np.zeros(n)
    for i in range(n):
        out[i] = a
        a, b = b, a + b
    return out


def row_loop(A):
    out = np.empty(A.shape[0])
    for i, row in enumerate(A):
        out[i] = row.max() - row.min()
    return out
