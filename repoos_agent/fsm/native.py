"""An fsm function compiled and called: the C the IR prints, built and cached by the loop track's toolchain, called
on the caller's own buffers (no copies), with its result, its output `bytearray` or its exception given back.

A call the native code cannot finish exactly (an index out of range, a guarded counter past its bound, an int
argument past `ranges.ARGUMENT`, an array of another type) runs the Python original instead, on the arguments as they were:
the written ones are put back first, so the original raises or returns what it would have.
"""

from __future__ import annotations

import builtins
import ctypes
import inspect
from collections.abc import Callable, Mapping
from pathlib import Path

import numpy as np
from tree_sitter import Node

from repoos_agent.backends.cc import build_shared_library
from repoos_agent.backends.library import load_library
from repoos_agent.codegen import CSource
from repoos_agent.fsm import ir
from repoos_agent.fsm.lower import BOOL, FsmRefusal, lower_function, parameter_defaults, parameter_names
from repoos_agent.fsm.nested import rebuild
from repoos_agent.fsm.objects_in_c import native_ints, native_rebuild, native_tuples
from repoos_agent.fsm.print_c import ENTRY, ORIGINAL, RELEASE, print_c
from repoos_agent.fsm.ranges import ARGUMENT, HIGH, LOW, check_widths


class _Buffer(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("len", ctypes.c_int64), ("cap", ctypes.c_int64)]


def parameter_types(function: Node, values: Mapping[str, object]) -> dict[str, ir.Sequence | str]:
    """Each parameter's type, read off a call's value; anything else the track does not take is refused. A
    parameter with an int default is an int one, whether the call leaves it out or passes it; one with a table
    default (`bytes`, a tuple of ints) is typed by the value the call passes, or by its default."""
    types: dict[str, ir.Sequence | str] = {}
    defaults = parameter_defaults(function)
    for name in parameter_names(function):
        value = values.get(name, defaults.get(name))
        if type(defaults.get(name)) is bool or type(value) is bool:
            types[name] = BOOL  # a flag: read only as a condition, so a bool and an int are alike
            continue
        if type(defaults.get(name)) is int and type(value) is not int:
            raise FsmRefusal(
                function.start_point[0] + 1,
                f"argument `{name}` is {_described(value)}: its default is an int, and the fsm track takes an int there",
            )
        if type(value) is int:
            types[name] = ir.INT
        elif isinstance(value, bytes):
            types[name] = ir.Sequence(name, ir.BYTES)
        elif isinstance(value, bytearray):
            types[name] = ir.Sequence(name, ir.BYTEARRAY)
        elif isinstance(value, np.ndarray) and value.ndim == 1 and value.dtype.name in ir.DTYPES:
            types[name] = ir.Sequence(name, ir.ARRAY, value.dtype.name)
        elif type(value) in (list, tuple) and all(type(element) is int for element in value):  # type: ignore[union-attr]
            types[name] = ir.Sequence(name, ir.INTS, "int64")
        elif type(value) is str:
            types[name] = ir.Sequence(name, ir.TEXT, "uint32")
        elif type(value) is list and all(type(element) is str for element in value):  # type: ignore[union-attr]
            types[name] = ir.Sequence(name, ir.STRS, "uint32")
        else:
            raise FsmRefusal(
                function.start_point[0] + 1,
                f"argument `{name}` is {_described(value)}: the fsm track takes ints, bytes, bytearrays, strs, lists "
                f"or tuples of ints, lists of strs and 1-D NumPy arrays of {', '.join(ir.DTYPES)}",
            )
    return types


def lower_for(function: Node, values: Mapping[str, object]) -> ir.Function:
    """The IR of `function` for arguments typed as `values` (or a `FsmRefusal` at a line)."""
    return lower_function(function, parameter_types(function, values))


class FsmNative:
    """One lowered function compiled (its widths proven first, or refused at a line): call it as the Python function,
    with the Python original to fall back on."""

    def __init__(self, function: ir.Function, original: Callable[..., object]) -> None:
        self.function = function
        self.original = original
        widths = check_widths(function)
        self.source = print_c(function, widths)
        self._unsigned = widths.unsigned_outputs
        library = build_shared_library(CSource(self.source, (), (), (), (), function.name))
        handle = load_library(library)
        self._entry = getattr(handle, ENTRY)
        self._entry.restype = ctypes.c_int64
        arguments: list[type] = []
        for parameter in function.parameters:
            arguments += [ctypes.c_void_p, ctypes.c_int64] if isinstance(parameter, ir.Sequence) else [ctypes.c_int64]
        buffers = [ctypes.POINTER(_Buffer)] * len(function.outputs)
        self._entry.argtypes = [*arguments, ctypes.POINTER(ctypes.c_int64), ctypes.POINTER(_Buffer), ctypes.c_void_p, *buffers]
        self._values = max((len(raised.values) for raised in function.raises), default=0)
        self._release = getattr(handle, RELEASE)
        self._release.argtypes = [ctypes.c_void_p]
        self.library = Path(library)
        self._signature = inspect.signature(original)
        positional = all(p.kind == p.POSITIONAL_OR_KEYWORD for p in self._signature.parameters.values())
        # each parameter's default (`empty` where none), where all are positional or keyword: a call that leaves out
        # trailing ones gets them as `bind` gives them, without its cost on every call (as much as a short call's work)
        self._defaults = tuple(p.default for p in self._signature.parameters.values()) if positional else None

    def __call__(self, *args: object, **kwargs: object) -> object:
        if not kwargs and self._defaults is not None and len(args) < len(self._defaults):
            missing = self._defaults[len(args) :]
            args = args if inspect.Parameter.empty in missing else (*args, *missing)
        if kwargs or len(args) != len(self.function.parameters):
            try:
                bound = self._signature.bind(*args, **kwargs)
            except TypeError:
                return self.original(*args, **kwargs)  # the original raises the call's own TypeError
            bound.apply_defaults()  # the defaults the original holds, as Python fills them in
            args = bound.args
        kept_alive: list[object] = []  # the copies a list or a str is passed as, until the call returns
        arguments = self._arguments(args, kept_alive)
        if arguments is None:
            return self.original(*args)
        kept = [
            (value, _copy(value)) for parameter, value in zip(self.function.parameters, args, strict=True) if _written(parameter)
        ]
        result, buffer, values = ctypes.c_int64(0), _Buffer(None, 0, 0), (ctypes.c_int64 * max(self._values, 1))()
        others = [_Buffer(None, 0, 0) for _ in self.function.outputs]
        try:
            code = self._entry(
                *arguments, ctypes.byref(result), ctypes.byref(buffer), ctypes.addressof(values), *map(ctypes.byref, others)
            )
            output = self._output(buffer, self.function.buffer_kind, self.function.buffer)
            if self.function.nested:
                grown = dict(zip([output.name for output in self.function.outputs], others, strict=True))
                nested = _rebuilt(self.function.nested, {self.function.buffer: buffer, **grown})  # type: ignore[dict-item]
            if self.function.results:
                grown = dict(zip([output.name for output in self.function.outputs], others, strict=True))
                outputs = {name: self._output(grown[name], self.function.output_kind(name), name) for name in grown}
                outputs[self.function.buffer] = output  # type: ignore[index]
        finally:
            for each in (buffer, *others):
                if each.data:
                    self._release(each.data)
        if code == ORIGINAL:
            for value, copy in kept:
                value[:] = copy  # type: ignore[index]
            return self.original(*args)
        if code > 0:
            raised = self.function.raises[code - 1]
            shown = [chr(value) if character else value for value, character in zip(values, raised.characters, strict=False)]
            raise self._exception(raised)(*((raised.message.format(*shown),) if raised.message else ()))
        if self.function.returns == ir.NESTED:
            return nested
        if self.function.returns == ir.OUTPUT:
            return outputs[self.function.results[0]]
        if self.function.returns == ir.TUPLE:
            return tuple(outputs[name] for name in self.function.results)
        return self._returned(result.value, output)

    def _output(self, buffer: _Buffer, kind: str, name: str | None) -> bytearray | list[int] | list[tuple[int | str, ...]]:
        """A local output the C code grew: a bytearray's bytes, a list's ints (read as unsigned where `ranges` found
        they may be past 2**63 - 1 and are never negative), or a list of tuples built from its flat elements (a
        character's code point made a `str` again), in C where the helpers are built (`objects_in_c`)."""
        if kind != ir.LIST:
            return bytearray(ctypes.string_at(buffer.data, buffer.len)) if buffer.len else bytearray()
        unsigned = name in self._unsigned  # never negative, maybe past 2**63
        if not buffer.len:
            return []
        shape = self.function.tuples.get(name)  # type: ignore[arg-type]
        if shape is None and (listed := native_ints()) is not None:
            return listed(buffer.data, buffer.len, unsigned)
        cell = ctypes.c_uint64 if unsigned else ctypes.c_int64
        cells = np.ctypeslib.as_array(ctypes.cast(buffer.data, ctypes.POINTER(cell)), (buffer.len,))
        whole = shape is not None and not unsigned and buffer.len % len(shape) == 0  # else `zip` below raises, as it should
        if whole and (in_c := native_tuples()) is not None:
            return in_c(cells, shape, self.function.strings)
        flat = cells.tolist()
        if shape is None:
            return flat
        columns = [self._column(flat[position :: len(shape)], element) for position, element in enumerate(shape)]
        return list(zip(*columns, strict=True))

    def _column(self, cells: list[int], kind: str) -> list[int] | list[str]:
        """One position of a list's tuples: its ints, or the `str`s they stand for, each distinct cell decoded once
        (a tokenizer's kinds are a few values repeated)."""
        if kind == ir.INT:
            return cells
        shown = {cell: ir.tuple_element(cell, kind, self.function.strings) for cell in set(cells)}
        return list(map(shown.__getitem__, cells))  # type: ignore[arg-type]

    def _arguments(self, args: tuple[object, ...], kept_alive: list[object]) -> list[object] | None:
        """The C arguments for `args`, or None when the build does not take them (then the original runs)."""
        arguments: list[object] = []
        for parameter, value in zip(self.function.parameters, args, strict=True):
            if isinstance(parameter, str):
                if type(value) not in (int, bool) or (type(value) is bool and parameter not in self.function.flags):
                    return None
                if not -ARGUMENT <= value <= ARGUMENT:
                    return None
                arguments.append(value)
                continue
            address = _address(parameter, value, kept_alive)
            if address is None:
                return None
            arguments += [address, len(kept_alive[-1]) if parameter.kind == ir.STRS else len(value)]  # type: ignore[arg-type]
        return arguments

    def _exception(self, raised: ir.Raise) -> type[BaseException]:
        """The class the original raises by that name: its module's own, else the builtin."""
        name = raised.exception
        found = getattr(self.original, "__globals__", {}).get(name, getattr(builtins, name, None))
        if not (isinstance(found, type) and issubclass(found, BaseException)):
            raise FsmRefusal(raised.line, f"`raise {name}`: `{name}` is not an exception class")
        return found

    def _returned(self, value: int, output: bytearray) -> object:
        kind = self.function.returns
        if kind == "none":
            return None
        if kind in (ir.BUFFER, ir.LIST):
            return output
        if kind == ir.BYTES:  # `bytes(out)`, `b"".join(parts)` or a slice of `bytes`
            return bytes(output)
        if kind == ir.TEXT:  # `"".join(chars)`: the list's code points
            return "".join(map(chr, output))
        if kind == ir.CHAR:
            return chr(value)
        if kind == ir.INT:
            return value
        return np.dtype(kind).type(value)


def _address(parameter: ir.Sequence, value: object, kept_alive: list[object]) -> object | None:
    """The address of a sequence argument's bytes, if it has the type the build was lowered for: a list or tuple
    of ints (each within 64 bits) is copied as `int64`, a `str` as its UTF-32 code points (a lone surrogate too)."""
    if parameter.kind == ir.INTS and type(value) in (list, tuple):
        if not all(type(element) is int and LOW <= element <= HIGH for element in value):  # type: ignore[union-attr]
            return None
        copied = np.array(value, dtype=np.int64)
        kept_alive.append(copied)
        return copied.ctypes.data
    if parameter.kind == ir.STRS and type(value) is list:
        packed = _packed_strings(value)  # type: ignore[arg-type]
        if packed is None:
            return None
        kept_alive.append(packed)
        return packed.ctypes.data
    if parameter.kind == ir.TEXT and type(value) is str:
        encoded = value.encode("utf-32-le", "surrogatepass")
        kept_alive.append(encoded)
        return ctypes.cast(ctypes.c_char_p(encoded), ctypes.c_void_p)
    if parameter.kind == ir.BYTES and type(value) is bytes:
        return ctypes.cast(ctypes.c_char_p(value), ctypes.c_void_p)
    if parameter.kind == ir.BYTEARRAY and type(value) is bytearray:
        return ctypes.addressof((ctypes.c_char * len(value)).from_buffer(value)) if value else 0
    if parameter.kind == ir.ARRAY and isinstance(value, np.ndarray):
        fits = value.ndim == 1 and value.dtype.name == parameter.dtype and value.flags.c_contiguous
        if fits and (value.flags.writeable or not parameter.written):
            return value.ctypes.data
    return None


def _packed_strings(value: list[object]) -> np.ndarray | None:
    """A list of `str` as `ir.STRS` lays it out in one `uint32` buffer (its count, each `str`'s start and the last
    one's end, then the code points), or None where an element is not exactly a `str` or the buffer would be past
    `uint32` positions."""
    if not all(type(element) is str for element in value):
        return None
    count = len(value)
    points = np.frombuffer("".join(value).encode("utf-32-le", "surrogatepass"), dtype=np.uint32)  # type: ignore[arg-type]
    total = 2 + count + len(points)
    if total > 0xFFFFFFFF:
        return None
    packed = np.empty(total, dtype=np.uint32)
    packed[0] = count
    packed[1] = 2 + count
    packed[2 : 2 + count] = 2 + count + np.cumsum(np.fromiter(map(len, value), dtype=np.int64, count=count))  # type: ignore[arg-type]
    packed[2 + count :] = points
    return packed


def _rebuilt(chain: tuple[str, ...], buffers: Mapping[str, _Buffer]) -> list:
    """The nested lists from the streams the C code grew (`fsm/nested.py`): the characters decoded at once, the
    lists built in C where the interpreter's headers let it be built (`objects_in_c`)."""

    def ints(buffer: _Buffer) -> np.ndarray:
        if not buffer.len:
            return np.zeros(0, dtype=np.int64)
        return np.ctypeslib.as_array(ctypes.cast(buffer.data, ctypes.POINTER(ctypes.c_int64)), (buffer.len,))

    characters = ints(buffers[chain[-1]]).astype(np.uint32).tobytes().decode("utf-32-le", "surrogatepass")
    in_c = native_rebuild()
    if in_c is not None:
        return in_c(characters, [ints(buffers[name]) for name in chain[:-1]])
    return rebuild(characters, [ints(buffers[name]).tolist() for name in chain[:-1]])


def _written(parameter: ir.Sequence | str) -> bool:
    return isinstance(parameter, ir.Sequence) and parameter.written


def _copy(value: object) -> object:
    return value.copy() if isinstance(value, np.ndarray) else bytearray(value)  # type: ignore[arg-type]


def _described(value: object) -> str:
    if isinstance(value, np.ndarray):
        return f"a {value.ndim}-D {value.dtype.name} array"
    return f"a {type(value).__name__}"
