"""The concrete types a kernel is built for: element types of arrays, kinds of scalars.

The model is generic in types; a build is not. A `Signature` binds each argument
to a type taken from real call values, and is part of what names a build.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from repoos_agent.errors import ArgumentSpecError
from repoos_agent.model.kernel import Kernel

C_TYPES = {
    "float64": "double", "float32": "float", "int64": "int64_t", "int32": "int32_t", "bool": "uint8_t",
    "uint32": "uint32_t", "uint64": "uint64_t",
}  # fmt: skip
"""The element types a build takes, and their C types: NumPy's bool is one byte holding 0 or 1."""
INDEX_ONLY_TYPES = frozenset({"uint32", "uint64"})
"""Types a build takes for index arrays read only as subscripts and bounds (each element read as an int64, a
too large `uint64` one as a negative index the entry checks refuse), never computed with: NumPy's unsigned
arithmetic is not modelled."""


@dataclass(frozen=True)
class Signature:
    """Element type per array argument and `"int"`/`"float"` per scalar argument."""

    arrays: tuple[tuple[str, str], ...]
    scalars: tuple[tuple[str, str], ...]

    def array_type(self, name: str) -> str:
        return dict(self.arrays)[name]

    def scalar_kind(self, name: str) -> str:
        return dict(self.scalars)[name]

    @staticmethod
    def of_values(kernel: Kernel, values: Mapping[str, object]) -> Signature:
        """Read the types off the values a call passes; a missing or ill-typed argument is an error."""
        missing = [a for a in kernel.arguments if a not in values]
        if missing:
            raise ArgumentSpecError(f"`{kernel.name}` needs a value for: {', '.join(missing)}")
        arrays, scalars = [], []
        ranks = {a.name: a.rank for a in kernel.arrays if a.is_argument and a.rank > 0}
        index_names = set(kernel.index_arrays)
        for name in kernel.arguments:
            value = values[name]
            if name in ranks:
                if not isinstance(value, np.ndarray):
                    raise ArgumentSpecError(f"argument `{name}` must be a NumPy array, got {type(value).__name__}")
                if value.dtype.name not in C_TYPES:
                    raise ArgumentSpecError(f"argument `{name}` has dtype {value.dtype.name}; supported: {', '.join(C_TYPES)}")
                if value.ndim != ranks[name]:
                    raise ArgumentSpecError(
                        f"argument `{name}` has {value.ndim} dimensions; the kernel indexes it with {ranks[name]}"
                    )
                wide = [axis for array, axis in kernel.unit_axes if array == name and value.shape[axis] != 1]
                if wide:
                    raise ArgumentSpecError(
                        f"argument `{name}` has extent {value.shape[wide[0]]} along axis {wide[0]}; the kernel was "
                        "modelled with it 1 (broadcast), as the inputs it was built from have it"
                    )
                if name in index_names and value.dtype.kind not in "iu":
                    raise ArgumentSpecError(
                        f"argument `{name}` is an index array (its values are subscripts or loop bounds) "
                        f"and must hold integers, got {value.dtype.name}"
                    )
                if value.dtype.name in INDEX_ONLY_TYPES and name not in kernel.index_only_arrays:
                    raise ArgumentSpecError(
                        f"argument `{name}` has dtype {value.dtype.name}: unsigned integers are taken for index arrays "
                        "read only as subscripts and loop bounds; pass it as int64"
                    )
                arrays.append((name, value.dtype.name))
            elif isinstance(value, (bool, int, np.integer)):
                scalars.append((name, "int"))
            elif isinstance(value, (float, np.floating)):
                if name in kernel.parameters:
                    raise ArgumentSpecError(f"argument `{name}` is a size (loop bound or subscript) and must be an integer")
                scalars.append((name, "float"))
            else:
                raise ArgumentSpecError(f"argument `{name}` must be a number or an array, got {type(value).__name__}")
        array_types, scalar_kinds = dict(arrays), dict(scalars)
        for cast in kernel.casts:
            source, target = cast.source.resolve(array_types, scalar_kinds), cast.target.resolve(array_types, scalar_kinds)
            if not np.can_cast(source, target, "same_kind"):
                raise ArgumentSpecError(
                    f"`{kernel.name}` line {cast.line}: `{cast.text}` copies {source} into {target}, which NumPy refuses "
                    "(casting='same_kind'); it raises TypeError there"
                )
        for requirement in kernel.requirements:
            dtype = requirement.value.resolve(array_types, scalar_kinds)
            if dtype not in requirement.allowed:
                raise ArgumentSpecError(
                    f"`{kernel.name}` line {requirement.line}: `{requirement.text}` is modelled for "
                    f"{' or '.join(requirement.allowed)} here, not {dtype}"
                )
        for allocation in kernel.allocations:
            dtype = allocation.dtype.resolve(array_types, scalar_kinds)
            if dtype not in C_TYPES or dtype in INDEX_ONLY_TYPES:
                raise ArgumentSpecError(
                    f"`{kernel.name}` line {allocation.line}: `{allocation.name}` would be {dtype}; supported: {', '.join(C_TYPES)}"
                )
            arrays.append((allocation.name, dtype))
        return Signature(tuple(arrays), tuple(scalars))
