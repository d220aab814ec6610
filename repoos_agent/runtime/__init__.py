"""The runtime: Python functions swapped for their verified native kernels, safely."""

from repoos_agent.runtime.swap import Accelerated, SwapFallbackWarning, SwappedFunction, accelerate, swap

__all__ = ["Accelerated", "SwapFallbackWarning", "SwappedFunction", "accelerate", "swap"]
