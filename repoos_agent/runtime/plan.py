"""How one swapped call reaches native code: guards on the caller's arrays, then their pointers.

Everything that does not depend on the call (argument order, expected dtypes, which
arrays are written, the C argument layout) is worked out once, so a call costs a
few attribute reads per argument and one ctypes call. A guard that fails returns
the reason instead of the C arguments; the caller then runs the Python original.
"""

from __future__ import annotations

import ctypes
import inspect
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from repoos_agent.backends.library import NativeKernel
from repoos_agent.codegen.c import FAILURE_CODE
from repoos_agent.measure.cores import call_team, usable_cores
from repoos_agent.model.kernel import Allocation, Kernel, ReturnValue, derived_values
from repoos_agent.model.signature import Signature
from repoos_agent.runtime.entry import entry_checks
from repoos_agent.store.records import VerifiedKernel

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
_address_of = ctypes.addressof
_char_view = ctypes.c_char.from_buffer


@dataclass(frozen=True)
class ArrayGuard:
    """What an array argument must be for the native kernel to take it."""

    name: str
    position: int
    dtype: np.dtype
    ndim: int
    written: bool
    unit_axes: tuple[int, ...] = ()  # axes the kernel took as extent 1 (NumPy broadcasts them): other calls run Python


@dataclass(frozen=True)
class KernelInterface:
    """The facts a call needs: argument order, array guards, scalar kinds, what the kernel allocates
    (its results and temporaries, with their element types) and what the function returns."""

    arguments: tuple[str, ...]
    arrays: tuple[ArrayGuard, ...]
    scalars: tuple[tuple[str, int, str], ...]  # (name, position, "int" | "float")
    returns: tuple[ReturnValue, ...]
    returns_tuple: bool = False
    allocations: tuple[tuple[Allocation, np.dtype], ...] = ()
    entry_code: str = ""  # the original's checks at entry, run in Python before the native kernel
    constants: tuple[tuple[str, int | float], ...] = ()  # module constants the kernel was built with

    @staticmethod
    def of_contract(contract: VerifiedKernel) -> KernelInterface:
        interface = json.loads(contract.interface)
        types = dict(entry.split(":", 1) for entry in contract.signature)
        arrays = [(name, rank, written) for name, rank, written in interface["arrays"]]
        units = tuple((name, axis) for name, axis in interface.get("unit_axes", []))
        allocations = tuple(Allocation.from_json(a) for a in interface.get("allocations", []))
        returns = tuple(ReturnValue(name, scalar) for name, scalar in interface.get("results", []))
        if not returns and interface.get("returns"):
            returns = (ReturnValue(interface["returns"]),)
        arguments = tuple(name for name in types if name not in {a.name for a in allocations})
        built = KernelInterface._build(arguments, types, arrays, returns, interface.get("returns_tuple", False), allocations, units)
        constants = tuple((name, value) for name, value in interface.get("constants", []))
        return replace(built, entry_code=interface.get("entry_code", ""), constants=constants)

    @staticmethod
    def of_kernel(kernel: Kernel, signature: Signature) -> KernelInterface:
        types = dict(signature.arrays) | dict(signature.scalars)
        arrays = [(a.name, a.rank, a.written) for a in kernel.arrays if a.is_argument and a.rank > 0 and a.name in kernel.arguments]
        built = KernelInterface._build(
            kernel.arguments, types, arrays, kernel.returns, kernel.returns_tuple, kernel.allocations, kernel.unit_axes
        )
        return replace(built, entry_code=kernel.entry_code, constants=kernel.constants)

    @staticmethod
    def _build(
        arguments: tuple[str, ...],
        types: dict[str, str],
        arrays: list,
        returns: tuple[ReturnValue, ...],
        returns_tuple: bool,
        allocations: tuple[Allocation, ...],
        unit_axes: tuple[tuple[str, int], ...],
    ) -> KernelInterface:
        position = {name: index for index, name in enumerate(arguments)}
        arrays = [entry for entry in arrays if entry[0] in position]
        guards = tuple(
            ArrayGuard(name, position[name], np.dtype(types[name]), rank, written, tuple(a for n, a in unit_axes if n == name))
            for name, rank, written in arrays
        )
        array_names = {guard.name for guard in guards}
        scalars = tuple((name, position[name], types[name]) for name in arguments if name not in array_names)
        typed = tuple((allocation, np.dtype(types[allocation.name])) for allocation in allocations)
        return KernelInterface(tuple(arguments), guards, scalars, tuple(returns), returns_tuple, typed)


class CallPlan:
    """A native kernel bound to a Python function's signature, with the per-call guards."""

    def __init__(self, python: Callable[..., object], interface: KernelInterface, native: NativeKernel) -> None:
        self.interface = interface
        self.native = native
        self.arity = len(interface.arguments)
        self._signature = inspect.signature(python)
        self._arrays = interface.arrays
        self._scalars = interface.scalars
        self._written = tuple(index for index, guard in enumerate(interface.arrays) if guard.written)
        # A kernel that may fail after it wrote (`Failure`) keeps the written arguments to put back before the
        # original runs, which raises where they stood.
        fails = any(check.code >= FAILURE_CODE for check in native.source.checks)
        self._undone = tuple(interface.arrays[index].position for index in self._written) if fails else ()
        position = {name: index for index, name in enumerate(interface.arguments)}
        allocated = {allocation.name: index for index, (allocation, _) in enumerate(interface.allocations)}
        layout = []
        for argument in native.source.arguments:
            if argument.name in allocated:
                layout.append(("allocated_" + argument.role, allocated[argument.name], argument.dim))
            else:
                layout.append((argument.role, position[argument.name], argument.dim))
        self._layout = tuple(layout)
        self._c_arity = len(layout)
        self._array_slot = {guard.position: index for index, guard in enumerate(interface.arrays)}
        self._sizes = tuple((name, position[name]) for name in native.source.sizes)
        # Sizes the allocations' extents read (a contract stored before allocations existed has none).
        self._shape_sizes = tuple(
            (name, position[array], dim)
            for name, (array, dim) in zip(native.source.shape_names, native.source.shape_sizes, strict=False)
        )
        self._returns = interface.returns
        self._returns_tuple = interface.returns_tuple
        self._result_slots = tuple(
            ("allocated", allocated[r.name], r.scalar) if r.name in allocated else ("argument", position[r.name], r.scalar)
            for r in interface.returns
        )
        self._cores = usable_cores() if native.parallel else 0
        self._entry = entry_checks(python, interface.arguments, interface.entry_code)
        self._globals = getattr(python, "__globals__", {})
        self.last_team: int | None = None  # threads the last call's parallel loops ran on (None: no OpenMP)

    def bind(self, args: tuple, kwargs: dict) -> Sequence[object] | None:
        """Arguments in the function's order; None when the call does not fit the signature (Python raises)."""
        if not kwargs and len(args) == self.arity:
            return args
        try:
            bound = self._signature.bind(*args, **kwargs)
        except TypeError:
            return None
        bound.apply_defaults()
        return tuple(bound.arguments[name] for name in self.interface.arguments)

    def check_entry(self, values: Sequence[object]) -> None:
        """Run the original's checks at entry on the bound arguments: they raise as the original does."""
        if self._entry is not None:
            self._entry(*values)

    def prepare(self, values: Sequence[object]) -> list[object] | str:
        """The C arguments, or the reason the native kernel must not take this call."""
        for name, built_with in self.interface.constants:
            now = self._globals.get(name)
            if type(now) is not type(built_with) or now != built_with:
                return f"module constant `{name}` is {now!r} now; the native kernel was built with {built_with!r}"
        pointers: list[int] = []
        ends: list[int] = []
        for guard in self._arrays:
            value = values[guard.position]
            if type(value) is not np.ndarray:
                return f"argument `{guard.name}` is a {type(value).__name__}, not a NumPy array"
            if value.dtype != guard.dtype:
                return f"argument `{guard.name}` is {value.dtype.name}; the native kernel takes {guard.dtype.name}"
            if value.ndim != guard.ndim:
                return f"argument `{guard.name}` has {value.ndim} dimensions; the kernel indexes it with {guard.ndim}"
            for axis in guard.unit_axes:
                if value.shape[axis] != 1:
                    return (
                        f"argument `{guard.name}` has extent {value.shape[axis]} along axis {axis}; "
                        "the native kernel was built for the extent 1 there (broadcast)"
                    )
            flags = value.flags
            if not flags.c_contiguous:
                return f"argument `{guard.name}` is not C-contiguous (a strided view or a transpose)"
            if guard.written and not flags.writeable:
                return f"argument `{guard.name}` is read-only, but the kernel writes it"
            address = _address_of(_char_view(value)) if flags.writeable and value.nbytes else value.__array_interface__["data"][0]
            pointers.append(address)
            ends.append(address + value.nbytes)
        for index in self._written:
            start, end = pointers[index], ends[index]
            for other, (other_start, other_end) in enumerate(zip(pointers, ends, strict=True)):
                if other != index and start < other_end and other_start < end:
                    return (
                        f"arguments `{self._arrays[index].name}` and `{self._arrays[other].name}` share memory, "
                        "and the kernel writes one of them"
                    )
        for name, position, kind in self._scalars:
            value = values[position]
            if kind == "int":
                if not isinstance(value, (int, np.integer)):
                    return f"argument `{name}` is a {type(value).__name__}; the native kernel takes an integer"
                if not INT64_MIN <= value <= INT64_MAX:  # ctypes would wrap it round silently
                    return f"argument `{name}` = {value} does not fit the native kernel's 64-bit integer"
            elif not isinstance(value, (float, int, np.floating, np.integer)):
                return f"argument `{name}` is a {type(value).__name__}; the native kernel takes a number"
        try:
            allocated = self._allocate(values)
        except ZeroDivisionError:
            return "a size the function computes divides by zero (the original raises ZeroDivisionError)"
        prepared: list[object] = []
        for role, position, dim in self._layout:
            if role == "array":
                prepared.append(pointers[self._array_slot[position]])
            elif role == "dim":
                prepared.append(values[position].shape[dim])  # type: ignore[attr-defined]
            elif role == "allocated_array":
                prepared.append(allocated[position].ctypes.data)
            elif role == "allocated_dim":
                prepared.append(allocated[position].shape[dim])
            else:
                prepared.append(values[position])
        return prepared + allocated  # the allocations ride after the C arguments, for `run` to return

    def _allocate(self, values: Sequence[object]) -> list[np.ndarray]:
        """The call's results (new arrays, as NumPy's) and temporaries (kept from the last call on this thread),
        sized by its sizes, the derived ones computed as the native entry computes them."""
        if not self.interface.allocations:
            return []
        sizes = {name: int(values[position]) for name, position in self._sizes}  # type: ignore[call-overload]
        for name, position, dim in self._shape_sizes:
            sizes[name] = values[position].shape[dim]  # type: ignore[attr-defined]
        sizes = derived_values(self.native.source.derived, sizes)
        return [self.native.allocation(a.name, a.role, a.extents(sizes)) for a, _ in self.interface.allocations]

    def run(self, prepared: list[object], values: Sequence[object]) -> tuple[bool, object]:
        """Run natively: (True, the function's result) or (False, why the kernel refused: a shape check, or a
        failure the computation found, whose writes to the arguments are undone).

        A parallel kernel's team is sized at each call to the cores no other runnable task wants: with
        one core taken, a team of two would wait at every barrier for its parked thread, and run slower
        than the serial schedule; a team of one runs at the serial schedule's speed."""
        if self._cores:
            self.last_team = call_team(self._cores)
            self.native.set_team(self.last_team)
        kept = [values[position].copy() for position in self._undone]  # type: ignore[attr-defined]
        code = self.native.run_prepared(prepared[: self._c_arity] if self.interface.allocations else prepared)
        if code != 0:
            for position, before in zip(self._undone, kept, strict=True):
                np.copyto(values[position], before)  # type: ignore[call-overload]
            return False, self.native.refusal(code, dict(zip(self.interface.arguments, values, strict=True)))
        if not self._result_slots:
            return True, None
        allocated = prepared[self._c_arity :]
        results = []
        for where, slot, scalar in self._result_slots:
            array = allocated[slot] if where == "allocated" else values[slot]
            results.append(array[0] if scalar else array)  # type: ignore[index]
        return True, tuple(results) if self._returns_tuple else results[0]
