"""Sparse kernels over CSR arrays: subscripts read from index arrays, loop bounds read from row pointers."""
