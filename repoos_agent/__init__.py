"""RepoOS Agent: plain Python loop kernels in, proven-legal native code out."""

from repoos_agent.openblas_core import prefer_feature_kernels

PACKAGE = "repoos-agent"

prefer_feature_kernels()  # before NumPy loads its OpenBLAS, wherever the package is imported first


def __getattr__(name: str):
    """`repoos_agent.swap` and `repoos_agent.accelerate`, imported on first use so the CLI starts fast;
    `__version__`, read from the installed package's metadata (pyproject.toml is the one place it is written)."""
    if name in ("swap", "accelerate"):
        from repoos_agent import runtime

        return getattr(runtime, name)
    if name == "__version__":
        from importlib.metadata import version

        return version(PACKAGE)
    raise AttributeError(f"module 'repoos_agent' has no attribute {name!r}")


__all__ = ["accelerate", "swap"]
