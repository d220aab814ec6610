"""2mm: D := alpha*A*B*C + beta*D, with tmp := alpha*A*B first.

PolyBench/C 4.2.1, linear-algebra/kernels.
"""

import numpy as np

NAME = "2mm"
CATEGORY = "linear-algebra/kernels"
SIZES = {
    "MINI": {"ni": 16, "nj": 18, "nk": 22, "nl": 24},
    "SMALL": {"ni": 40, "nj": 50, "nk": 70, "nl": 80},
    "MEDIUM": {"ni": 180, "nj": 190, "nk": 210, "nl": 220},
    "LARGE": {"ni": 800, "nj": 900, "nk": 1100, "nl": 1200},
    "EXTRALARGE": {"ni": 1600, "nj": 1800, "nk": 2200, "nl": 2400},
}


def init(ni: int, nj: int, nk: int, nl: int) -> dict:
    """PolyBench's init_array: A = ((i*j+1)%ni)/ni, B = (i*(j+1)%nj)/nj,
    C = ((i*(j+3)+1)%nl)/nl, D = (i*(j+2)%nk)/nk."""
    i_i = np.arange(ni)[:, None]
    i_k = np.arange(nk)[:, None]
    i_j = np.arange(nj)[:, None]
    j_k = np.arange(nk)[None, :]
    j_j = np.arange(nj)[None, :]
    j_l = np.arange(nl)[None, :]
    A = ((i_i * j_k + 1) % ni).astype(np.float64) / ni
    B = (i_k * (j_j + 1) % nj).astype(np.float64) / nj
    C = ((i_j * (j_l + 3) + 1) % nl).astype(np.float64) / nl
    D = (i_i * (j_l + 2) % nk).astype(np.float64) / nk
    return {
        "ni": ni,
        "nj": nj,
        "nk": nk,
        "nl": nl,
        "alpha": 1.5,
        "beta": 1.2,
        "tmp": np.zeros((ni, nj)),
        "A": A,
        "B": B,
        "C": C,
        "D": D,
    }


def k2mm(ni, nj, nk, nl, alpha, beta, tmp, A, B, C, D):
    for i in range(ni):
        for j in range(nj):
            tmp[i, j] = 0.0
            for k in range(nk):
                tmp[i, j] += alpha * A[i, k] * B[k, j]
    for i in range(ni):
        for j in range(nl):
            D[i, j] *= beta
            for k in range(nj):
                D[i, j] += tmp[i, k] * C[k, j]
