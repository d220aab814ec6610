"""The bundled kernels: PolyBench/C 4.2.1 in Python, found by name."""

from __future__ import annotations

import difflib
import importlib
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from types import ModuleType

import kernels.polybench
from repoos_agent.errors import UnknownTargetError

SIZE_CLASSES = ("MINI", "SMALL", "MEDIUM", "LARGE", "EXTRALARGE")


@dataclass(frozen=True)
class BundledKernel:
    """One bundled kernel: its PolyBench name, file, function and size classes."""

    name: str
    category: str
    path: Path
    function: str
    sizes: dict[str, dict[str, int]]
    module: ModuleType

    def inputs(self, size: str) -> dict[str, object]:
        """PolyBench's own initial values for `size`, as the kernel's keyword arguments."""
        return self.module.init(**self.sizes[size])

    def python_function(self):
        return getattr(self.module, self.function)


@cache
def bundled_kernels() -> tuple[BundledKernel, ...]:
    """Every bundled kernel, sorted by category then name."""
    directory = Path(kernels.polybench.__file__).parent
    found = []
    for path in sorted(directory.glob("*.py")):
        if path.stem.startswith("_"):
            continue
        module = importlib.import_module(f"kernels.polybench.{path.stem}")
        found.append(BundledKernel(module.NAME, module.CATEGORY, path, path.stem, module.SIZES, module))
    return tuple(sorted(found, key=lambda k: (k.category, k.name)))


def find_bundled(name: str) -> BundledKernel:
    """The kernel called `name` (`jacobi-2d` or `jacobi_2d`), or an error that suggests near names."""
    wanted = name.strip().lower().replace("_", "-")
    by_name = {k.name: k for k in bundled_kernels()}
    if wanted in by_name:
        return by_name[wanted]
    close = difflib.get_close_matches(wanted, list(by_name), n=3)
    hint = f"; did you mean {', '.join(close)}?" if close else "; `repoos kernels` (the MCP tool list_kernels) lists them"
    raise UnknownTargetError(f"unknown kernel `{name}`{hint}")
