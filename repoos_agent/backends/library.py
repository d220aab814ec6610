"""Calling a built kernel on the caller's NumPy buffers, through ctypes, without copies."""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from repoos_agent.codegen import CSource
from repoos_agent.codegen.c import COUNTER, ENTRY
from repoos_agent.errors import ArgumentSpecError, KernelRuntimeError
from repoos_agent.model.signature import Signature

_LOADED: dict[Path, ctypes.CDLL] = {}
_LOAD_LOCK = threading.Lock()

_CTYPES = {"int64_t": ctypes.c_int64, "double": ctypes.c_double}


def _load(path: Path) -> ctypes.CDLL:
    """Each library is loaded once per process."""
    with _LOAD_LOCK:
        if path not in _LOADED:
            _LOADED[path] = ctypes.CDLL(str(path))
        return _LOADED[path]


class NativeKernel:
    """A built kernel: call it with the same arguments as the Python function."""

    def __init__(self, signature: Signature, source: CSource, library: Path) -> None:
        self.signature = signature
        self.source = source
        self.library = library
        handle = _load(library)
        self._entry = getattr(handle, ENTRY)
        self._entry.restype = ctypes.c_int
        self._entry.argtypes = [ctypes.c_void_p if a.role == "array" else _CTYPES[a.c_type] for a in source.arguments]
        self._counter = getattr(handle, COUNTER)
        self._counter.restype = ctypes.c_int64
        self._counter.argtypes = [ctypes.c_int64] * (len(source.sizes) + len(source.shape_sizes))
        self._messages = {check.code: check for check in source.checks}
        self._dtypes = dict(signature.arrays)

    def __call__(self, values: Mapping[str, object]) -> None:
        """Run in place on `values` (the Python function's arguments by name)."""
        args: list[object] = []
        for argument in self.source.arguments:
            value = values[argument.name]
            if argument.role == "array":
                args.append(self._buffer(argument.name, value))
            elif argument.role == "dim":
                args.append(value.shape[argument.dim])
            else:
                args.append(value)
        code = self._entry(*args)
        if code != 0:
            raise KernelRuntimeError(f"`{self.source.name}` refused the call: {self.refusal(code, values)}")

    def run_prepared(self, args: Sequence[object]) -> int:
        """Call with C arguments already in order (pointers as integers); returns the kernel's code.

        The runtime's fast path: it has checked the buffers itself, so nothing is checked twice."""
        return self._entry(*args)

    def refusal(self, code: int, values: Mapping[str, object]) -> str:
        """Why the kernel returned `code`: its shape checks run before any write."""
        check = self._messages.get(code)
        if check is None:
            return f"error code {code}"
        return f"{check.message}, but its shape is {values[check.array].shape}"

    def _buffer(self, name: str, value: object) -> int:
        if not isinstance(value, np.ndarray):
            raise ArgumentSpecError(f"argument `{name}` must be a NumPy array")
        if value.dtype.name != self._dtypes[name]:
            raise ArgumentSpecError(f"argument `{name}` is {value.dtype.name}; this build takes {self._dtypes[name]}")
        if not value.flags.c_contiguous:
            raise ArgumentSpecError(f"argument `{name}` is not C-contiguous")
        return value.ctypes.data

    def instances(self, values: Mapping[str, object]) -> int:
        """How many statement instances a call with these sizes executes (no arrays touched)."""
        args = [int(values[p]) for p in self.source.sizes]
        args += [int(values[array].shape[dim]) for array, dim in self.source.shape_sizes]
        return int(self._counter(*args))
