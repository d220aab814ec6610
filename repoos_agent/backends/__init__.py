"""Backends: generated code to a loadable native library."""

from repoos_agent.backends.build import build_baseline, build_native
from repoos_agent.backends.cc import Toolchain, build_shared_library, default_toolchain
from repoos_agent.backends.library import NativeKernel

__all__ = ["NativeKernel", "Toolchain", "build_baseline", "build_native", "build_shared_library", "default_toolchain"]
