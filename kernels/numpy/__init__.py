"""NumPy programs written the way people write them: slices, broadcasting, `@`, reductions (see ../README.md)."""
