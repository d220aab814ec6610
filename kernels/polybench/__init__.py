"""PolyBench/C 4.2.1, all 30 kernels, as plain Python loops (see ../README.md)."""
