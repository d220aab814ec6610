"""doitgen: multiresolution analysis kernel, A[r][q][:] := A[r][q][:] * C4.

PolyBench/C 4.2.1, linear-algebra/kernels.
"""

# Plain `import numpy`: `np` is one of PolyBench's size names for this kernel.
import numpy

NAME = "doitgen"
CATEGORY = "linear-algebra/kernels"
SIZES = {
    "MINI": {"nq": 8, "nr": 10, "np": 12},
    "SMALL": {"nq": 20, "nr": 25, "np": 30},
    "MEDIUM": {"nq": 40, "nr": 50, "np": 60},
    "LARGE": {"nq": 140, "nr": 150, "np": 160},
    "EXTRALARGE": {"nq": 220, "nr": 250, "np": 270},
}


def init(nr: int, nq: int, np: int) -> dict:
    """PolyBench's init_array: A[i][j][k] = ((i*j+k)%np)/np, C4 = (i*j%np)/np."""
    i = numpy.arange(nr)[:, None, None]
    j = numpy.arange(nq)[None, :, None]
    k = numpy.arange(np)[None, None, :]
    s = numpy.arange(np)
    return {
        "nr": nr,
        "nq": nq,
        "np": np,
        "A": ((i * j + k) % np).astype(numpy.float64) / np,
        "C4": ((s[:, None] * s[None, :]) % np).astype(numpy.float64) / np,
        "sum": numpy.zeros(np),
    }


def doitgen(nr, nq, np, A, C4, sum):
    for r in range(nr):
        for q in range(nq):
            for p in range(np):
                sum[p] = 0.0
                for s in range(np):
                    sum[p] += A[r, q, s] * C4[s, p]
            for p in range(np):
                A[r, q, p] = sum[p]
