"""3mm: G := (A*B)*(C*D), via E := A*B and F := C*D. PolyBench/C 4.2.1, linear-algebra/kernels."""

import numpy as np

NAME = "3mm"
CATEGORY = "linear-algebra/kernels"
SIZES = {
    "MINI": {"ni": 16, "nj": 18, "nk": 20, "nl": 22, "nm": 24},
    "SMALL": {"ni": 40, "nj": 50, "nk": 60, "nl": 70, "nm": 80},
    "MEDIUM": {"ni": 180, "nj": 190, "nk": 200, "nl": 210, "nm": 220},
    "LARGE": {"ni": 800, "nj": 900, "nk": 1000, "nl": 1100, "nm": 1200},
    "EXTRALARGE": {"ni": 1600, "nj": 1800, "nk": 2000, "nl": 2200, "nm": 2400},
}


def init(ni: int, nj: int, nk: int, nl: int, nm: int) -> dict:
    """PolyBench's init_array: A = ((i*j+1)%ni)/(5*ni), B = ((i*(j+1)+2)%nj)/(5*nj),
    C = (i*(j+3)%nl)/(5*nl), D = ((i*(j+2)+2)%nk)/(5*nk)."""
    i_i = np.arange(ni)[:, None]
    i_k = np.arange(nk)[:, None]
    i_j = np.arange(nj)[:, None]
    i_m = np.arange(nm)[:, None]
    j_k = np.arange(nk)[None, :]
    j_j = np.arange(nj)[None, :]
    j_m = np.arange(nm)[None, :]
    j_l = np.arange(nl)[None, :]
    A = ((i_i * j_k + 1) % ni).astype(np.float64) / (5 * ni)
    B = ((i_k * (j_j + 1) + 2) % nj).astype(np.float64) / (5 * nj)
    C = (i_j * (j_m + 3) % nl).astype(np.float64) / (5 * nl)
    D = ((i_m * (j_l + 2) + 2) % nk).astype(np.float64) / (5 * nk)
    return {
        "ni": ni,
        "nj": nj,
        "nk": nk,
        "nl": nl,
        "nm": nm,
        "E": np.zeros((ni, nj)),
        "A": A,
        "B": B,
        "F": np.zeros((nj, nl)),
        "C": C,
        "D": D,
        "G": np.zeros((ni, nl)),
    }


def k3mm(ni, nj, nk, nl, nm, E, A, B, F, C, D, G):
    # E := A*B
    for i in range(ni):
        for j in range(nj):
            E[i, j] = 0.0
            for k in range(nk):
                E[i, j] += A[i, k] * B[k, j]
    # F := C*D
    for i in range(nj):
        for j in range(nl):
            F[i, j] = 0.0
            for k in range(nm):
                F[i, j] += C[i, k] * D[k, j]
    # G := E*F
    for i in range(ni):
        for j in range(nl):
            G[i, j] = 0.0
            for k in range(nj):
                G[i, j] += E[i, k] * F[k, j]
