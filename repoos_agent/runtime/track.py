"""The loop track's registration (`repoos_agent.tracks`): asked last, it benches whatever no other track
claims, on the leg of `bench_leg`. Its model is ingest's own (the loop and NumPy front ends), and its swap is
the runtime's `swap`, which `repoos run` writes after each function's `def`."""

from repoos_agent.tracks import Track


def benches(script: str, function: str, graph: str | None) -> bool:
    """Every function: the loop track's leg says itself why one cannot be modelled."""
    return True


TRACK = Track(name="affine", benches=benches, bench_leg="repoos_agent.runtime.bench_leg")
