"""RepoOS Agent: plain Python loop kernels in, proven-legal native code out."""

__version__ = "0.1.0"
