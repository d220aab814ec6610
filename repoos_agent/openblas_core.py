"""Which OpenBLAS kernels this CPU runs, chosen by its features, for every OpenBLAS in the process.

Its own module, importing nothing heavy: the CLI calls `prefer_feature_kernels` before NumPy
loads, because an OpenBLAS reads `OPENBLAS_CORETYPE` once, when it loads.
"""

from __future__ import annotations

import os
from pathlib import Path


def openblas_core(cpuinfo: Path = Path("/proc/cpuinfo")) -> str | None:
    """The OpenBLAS kernel family this CPU's features run, for `OPENBLAS_CORETYPE` (unless the user set it).

    Debian's OpenBLAS 0.3.21 picks its kernels by CPU model, and a model it does not know (a virtual
    "Intel Xeon Processor" with AVX-512) gets the SSE3 `Prescott` kernels: gemm at LARGE took 1.7 s
    there and 0.44 s with `SkylakeX`, as fast as NumPy's own OpenBLAS. OpenBLAS reads the variable
    once, when it loads."""
    try:
        flags = next((line.split(":", 1)[1].split() for line in cpuinfo.read_text().splitlines() if line.startswith("flags")), [])
    except OSError:
        return None
    if {"avx512f", "avx512bw", "avx512dq", "avx512vl"} <= set(flags):
        return "SkylakeX"
    if {"avx2", "fma"} <= set(flags):
        return "Haswell"
    return None


def prefer_feature_kernels(cpuinfo: Path = Path("/proc/cpuinfo")) -> None:
    """Set `OPENBLAS_CORETYPE` from the CPU's features unless the user set it, before any OpenBLAS loads.

    NumPy 1.26's bundled OpenBLAS (0.3.23, the peers' venv) does what Debian's does on this
    virtual CPU: a 200x240 by 240x220 product took 1.37 ms with the kernels it picked and
    0.32 ms with `SkylakeX`, so every speedup over NumPy of a kernel with a product was
    inflated about fourfold. With the variable set, NumPy, SciPy's OpenBLAS for the peers and
    Debian's for our `blas` calls all run the kernels the CPU has."""
    core = openblas_core(cpuinfo)
    if core is not None:
        os.environ.setdefault("OPENBLAS_CORETYPE", core)
