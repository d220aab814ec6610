"""Graph kernels over CSR arrays, written as plain Python loops: what the NetworkX backend runs."""
