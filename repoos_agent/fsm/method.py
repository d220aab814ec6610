"""A method whose state lives on `self`, compiled: its attributes read at entry and written back at exit.

The int attributes the method reads or assigns travel in one `int64` array, read and written in place by the
native code, and are set back on the instance after the call, also when the method raises after changing them
(Python leaves them changed there too). Its `bytes`, `bytearray` and `str` attributes are passed as sequences, a
`bytearray` written in place. A call the native code cannot take exactly (an attribute of another type or past 64
bits, an instance whose class hooks attribute access, a written buffer shared with another argument) runs the
method itself, and so does a call the native code gives up on: the array and buffers are put back first.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping

import numpy as np
from tree_sitter import Node

from repoos_agent.fsm import ir
from repoos_agent.fsm.lower import FsmRefusal, lower_function
from repoos_agent.fsm.native import FsmNative, parameter_types
from repoos_agent.ingest.classify import walk
from repoos_agent.ingest.parse import text

_ORIGINAL = object()
"""What the native code's fallback gives back: the wrapper then runs the method itself on the instance."""


class _Fallback:
    """The native code's Python original: it only tells the wrapper to run the method (the module's exceptions are
    found through its `__globals__`, as a function's)."""

    def __init__(self, method: Callable[..., object]) -> None:
        self.__globals__ = getattr(method, "__globals__", {})

    def __call__(self, *args: object) -> object:
        return _ORIGINAL


def attributes_of(function: Node, instance: object) -> dict[str, ir.Sequence | str]:
    """The types of the attributes of `self` the method reads or assigns, in source order, read off `instance`:
    an int, or a sequence as `parameter_types` types an argument; anything else refused at its first use."""
    found: dict[str, ir.Sequence | str] = {}
    for node in sorted(walk(function.child_by_field_name("body")), key=lambda node: node.start_byte):
        if node.type != "attribute" or text(node.child_by_field_name("object")) != "self":
            continue
        name = text(node.child_by_field_name("attribute"))
        if name in found:
            continue
        if name not in getattr(instance, "__dict__", {}):
            raise FsmRefusal(node.start_point[0] + 1, f"`self.{name}` is not an attribute of the instance's own")
        value = vars(instance)[name]
        if type(value) is int:
            found[name] = ir.INT
        elif type(value) in SEQUENCES:
            found[name] = ir.Sequence(name, *SEQUENCES[type(value)])
        else:
            raise FsmRefusal(
                node.start_point[0] + 1,
                f"`self.{name}` is a {type(value).__name__}: only int, bytes, bytearray and str attributes are modelled",
            )
    return found


SEQUENCES = {bytes: (ir.BYTES, "uint8"), bytearray: (ir.BYTEARRAY, "uint8"), str: (ir.TEXT, "uint32")}
"""The sequence attributes a method may have, as the native code takes them."""


class FsmMethod:
    """`Class.method` compiled for instances like `instance`, called as the method: `compiled(obj, *args)`."""

    def __init__(self, function: Node, method: Callable[..., object], instance: object, values: Mapping[str, object]) -> None:
        self.attributes = attributes_of(function, instance)
        types = parameter_types(function, values)
        self.native = FsmNative(lower_function(function, types, self.attributes), _Fallback(method))  # type: ignore[arg-type]
        self.method = method
        self.ints = [name for name, kind in self.attributes.items() if not isinstance(kind, ir.Sequence)]
        self.changed = [name.removeprefix("self__") for name in _changed(self.native.function)]
        self.sequences = [name for name, kind in self.attributes.items() if isinstance(kind, ir.Sequence)]
        written = {p.name for p in self.native.function.parameters if isinstance(p, ir.Sequence) and p.written}
        self.written = [name for name in self.sequences if "self__" + name in written]
        self._signature = inspect.signature(method)

    def __call__(self, instance: object, *args: object, **kwargs: object) -> object:
        try:
            bound = self._signature.bind(instance, *args, **kwargs)
        except TypeError:
            return self.method(instance, *args, **kwargs)  # the method raises the call's own TypeError
        bound.apply_defaults()
        given = bound.args[1:]
        state_values = self._ints(instance)
        if state_values is None:
            return self.method(instance, *args, **kwargs)
        state = np.zeros(len(self.changed), dtype=np.int64)  # what the method leaves in its assigned attributes
        held = [vars(instance)[name] for name in self.sequences]
        if self._shared(held, given):
            return self.method(instance, *args, **kwargs)
        try:
            result = self.native(state, *held, *state_values, *given)
        except Exception:
            self._write_back(instance, state)  # the method raised after changing its attributes: they stay changed
            raise
        if result is _ORIGINAL:
            return self.method(instance, *args, **kwargs)
        self._write_back(instance, state)
        return result

    def _ints(self, instance: object) -> list[int] | None:
        """The int attributes' values, or None where the native code cannot take this instance."""
        kind = type(instance)
        if kind.__getattribute__ is not object.__getattribute__ or kind.__setattr__ is not object.__setattr__:
            return None
        own = getattr(instance, "__dict__", None)
        if own is None or any(name in vars(base) for base in kind.__mro__ for name in self.attributes):
            return None  # a class attribute (a property, a descriptor) by that name: Python's reads differ
        if any(name not in own for name in self.attributes):
            return None
        values = [own[name] for name in self.ints]
        return values if all(type(value) is int for value in values) else None

    def _shared(self, held: list[object], given: tuple[object, ...]) -> bool:
        """Whether a buffer the method writes is also another of its sequences or arguments (one memory, two names)."""
        written = [held[self.sequences.index(name)] for name in self.written]
        others = [*held, *given]
        return any(sum(value is buffer for value in others) > 1 for buffer in written)

    def _write_back(self, instance: object, state: np.ndarray) -> None:
        own = vars(instance)
        for name, value in zip(self.changed, state.tolist(), strict=True):
            if own[name] != value:
                own[name] = value


def _changed(function: ir.Function) -> list[str]:
    """The int attributes the lowered method stores into its state array, in their elements' order."""
    found: dict[int, str] = {}
    pending = list(function.body)
    while pending:
        statement = pending.pop()
        if isinstance(statement, ir.Store) and statement.sequence == "self__" and isinstance(statement.value, ir.Local):
            found[statement.index.value] = statement.value.name  # type: ignore[union-attr]
        for field in ("then", "orelse", "body", "default"):
            pending += getattr(statement, field, ())
        pending += [inner for _, body in getattr(statement, "cases", ()) for inner in body]
    return [found[k] for k in sorted(found)]
