"""Kernels bundled with RepoOS Agent: plain Python source the engine ingests."""
