"""doitgen: multiresolution analysis, A[r, :, :] := A[r, :, :] @ C4 for every r, in place. Modelled on PolyBench's doitgen."""

import numpy as np

NAME = "doitgen"
CATEGORY = "linear-algebra/kernels"
SIZES = {
    "MINI": {"nr": 10, "nq": 8, "ns": 12},
    "SMALL": {"nr": 20, "nq": 25, "ns": 30},
    "MEDIUM": {"nr": 40, "nq": 50, "ns": 60},
    "LARGE": {"nr": 256, "nq": 256, "ns": 320},
    "EXTRALARGE": {"nr": 512, "nq": 512, "ns": 320},
}


def init(nr: int, nq: int, ns: int) -> dict:
    """Uniform random A (nr, nq, ns) and C4 (ns, ns); `ns` is PolyBench's NP, renamed so as not to shadow NumPy."""
    rng = np.random.default_rng(42)
    return {"A": rng.random((nr, nq, ns)), "C4": rng.random((ns, ns))}


def doitgen(A, C4):
    nr = A.shape[0]
    for r in range(nr):
        A[r, :, :] = A[r, :, :] @ C4
