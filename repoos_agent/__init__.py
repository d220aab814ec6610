"""RepoOS Agent: plain Python loop kernels in, proven-legal native code out."""

__version__ = "0.1.0"


def __getattr__(name: str):
    """`repoos_agent.swap` and `repoos_agent.accelerate`, imported on first use so the CLI starts fast."""
    if name in ("swap", "accelerate"):
        from repoos_agent import runtime

        return getattr(runtime, name)
    raise AttributeError(f"module 'repoos_agent' has no attribute {name!r}")


__all__ = ["accelerate", "swap"]
