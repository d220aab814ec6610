"""The bundled kernels, found by name: PolyBench/C 4.2.1 as Python loops, NumPy programs, CSR kernels and
branchy byte-level code (`fsm`).

Each suite is a package under `kernels/`. PolyBench kernels keep their bare names
(`gemm`, `jacobi-2d`); the others are named `suite:name` (`numpy:gemm`), so that the
same algorithm written two ways never shares a name.
"""

from __future__ import annotations

import difflib
import importlib
import inspect
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from types import ModuleType

import kernels
from repoos_agent.errors import UnknownTargetError

SIZE_CLASSES = ("MINI", "SMALL", "MEDIUM", "LARGE", "EXTRALARGE")
SUITES = ("polybench", "numpy", "sparse", "graphs", "fsm")
"""The kernel packages under `kernels/`; the first one's kernels are named without a prefix."""


@dataclass(frozen=True)
class BundledKernel:
    """One bundled kernel: its name (`gemm`, `numpy:gemm`), suite, file, function and size classes."""

    name: str
    suite: str
    category: str
    path: Path
    function: str
    sizes: dict[str, dict[str, int]]
    module: ModuleType

    def inputs(self, size: str) -> dict[str, object]:
        """PolyBench's own initial values for `size`, as the kernel's keyword arguments; a parameter `init` leaves
        out takes its default, as a caller's call would."""
        values = self.module.init(**self.sizes[size])
        defaults = {
            name: parameter.default
            for name, parameter in inspect.signature(self.python_function()).parameters.items()
            if parameter.default is not inspect.Parameter.empty and name not in values
        }
        return values | defaults

    def ranks(self) -> dict[str, int]:
        """Its array arguments' ranks, read off its smallest inputs: NumPy code need not spell them out."""
        return {name: value.ndim for name, value in self.inputs(SIZE_CLASSES[0]).items() if hasattr(value, "ndim")}

    def python_function(self):
        return getattr(self.module, self.function)


@cache
def bundled_kernels(suite: str | None = "polybench") -> tuple[BundledKernel, ...]:
    """Every kernel of `suite` (every suite's when None), sorted by suite, category, then name."""
    found = []
    for name in SUITES if suite is None else (suite,):
        if name not in SUITES:
            raise UnknownTargetError(f"unknown kernel suite `{name}`; suites are {', '.join(SUITES)}")
        directory = Path(kernels.__file__).parent / name
        for path in sorted(directory.glob("*.py")):
            if path.stem.startswith("_"):
                continue
            module = importlib.import_module(f"kernels.{name}.{path.stem}")
            label = module.NAME if name == SUITES[0] else f"{name}:{module.NAME}"
            found.append(BundledKernel(label, name, module.CATEGORY, path, path.stem, module.SIZES, module))
    return tuple(sorted(found, key=lambda k: (SUITES.index(k.suite), k.category, k.name)))


def bundled_ranks(path: str | Path) -> dict[str, dict[str, int]] | None:
    """The array ranks of the bundled kernel defined in `path`, by function, for ingesting the file
    alone (NumPy code need not spell its ranks out); None for any other file."""
    try:
        wanted = Path(path).resolve()
    except OSError:
        return None
    for kernel in bundled_kernels(None):
        if kernel.path.resolve() == wanted:
            return {kernel.function: kernel.ranks()}
    return None


def find_bundled(name: str) -> BundledKernel:
    """The kernel called `name` (`jacobi-2d`, `jacobi_2d`, `numpy:gemm`), or an error that suggests near names."""
    wanted = name.strip().lower().replace("_", "-")
    by_name = {k.name: k for k in bundled_kernels(None)}
    if wanted in by_name:
        return by_name[wanted]
    close = difflib.get_close_matches(wanted, list(by_name), n=3)
    hint = f"; did you mean {', '.join(close)}?" if close else "; `repoos kernels` (the MCP tool list_kernels) lists them"
    raise UnknownTargetError(f"unknown kernel `{name}`{hint}")
