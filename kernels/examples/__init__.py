"""Hand-written kernels in the style users write: the engine's test bed beyond PolyBench."""
