"""Backends: generated code to a loadable native library."""

from repoos_agent.backends.cc import Toolchain, build_shared_library, default_toolchain
from repoos_agent.backends.library import NativeKernel

__all__ = ["NativeKernel", "Toolchain", "build_baseline", "build_shared_library", "default_toolchain"]


def build_baseline(kernel, signature) -> NativeKernel:
    """The kernel in its original order, compiled and loaded."""
    from repoos_agent.codegen import generate_c

    source = generate_c(kernel, signature)
    return NativeKernel(kernel, signature, source, build_shared_library(source))
