"""Backends: generated code to a loadable native library.

The package's names are imported from their modules on first use: `repoos cache info` reads the cache's
directory (`backends/cache.py`, `backends/cc.py`) and must not wait for the code generators `build` loads.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from repoos_agent.backends.build import build_baseline, build_native
    from repoos_agent.backends.cc import Toolchain, build_shared_library, default_toolchain
    from repoos_agent.backends.library import NativeKernel

_HOMES = {
    "build_baseline": "build",
    "build_native": "build",
    "Toolchain": "cc",
    "build_shared_library": "cc",
    "default_toolchain": "cc",
    "NativeKernel": "library",
}
"""The module of the package that defines each of its names."""

__all__ = ["NativeKernel", "Toolchain", "build_baseline", "build_native", "build_shared_library", "default_toolchain"]


def __getattr__(name: str) -> object:
    """A name of `__all__`, from the module `_HOMES` says defines it."""
    if name not in _HOMES:
        raise AttributeError(f"module 'repoos_agent.backends' has no attribute {name!r}")
    return getattr(importlib.import_module(f"repoos_agent.backends.{_HOMES[name]}"), name)
