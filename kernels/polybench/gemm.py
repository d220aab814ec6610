"""gemm: C := alpha*A*B + beta*C. PolyBench/C 4.2.1, linear-algebra/blas."""

import numpy as np

NAME = "gemm"
CATEGORY = "linear-algebra/blas"
SIZES = {
    "MINI": {"ni": 20, "nj": 25, "nk": 30},
    "SMALL": {"ni": 60, "nj": 70, "nk": 80},
    "MEDIUM": {"ni": 200, "nj": 220, "nk": 240},
    "LARGE": {"ni": 1000, "nj": 1100, "nk": 1200},
    "EXTRALARGE": {"ni": 2000, "nj": 2300, "nk": 2600},
}


def init(ni: int, nj: int, nk: int) -> dict:
    """PolyBench's init_array: C = ((i*j+1)%ni)/ni, A = (i*(j+1)%nk)/nk, B = (i*(j+2)%nj)/nj."""
    i = np.arange(ni)[:, None]
    k = np.arange(nk)[:, None]
    jj = np.arange(nj)[None, :]
    jk = np.arange(nk)[None, :]
    C = ((i * jj + 1) % ni).astype(np.float64) / ni
    A = (i * (jk + 1) % nk).astype(np.float64) / nk
    B = (k * (jj + 2) % nj).astype(np.float64) / nj
    return {
        "ni": ni,
        "nj": nj,
        "nk": nk,
        "alpha": 1.5,
        "beta": 1.2,
        "C": C,
        "A": A,
        "B": B,
    }


def gemm(ni, nj, nk, alpha, beta, C, A, B):
    for i in range(ni):
        for j in range(nj):
            C[i, j] *= beta
        for k in range(nk):
            for j in range(nj):
                C[i, j] += alpha * A[i, k] * B[k, j]
