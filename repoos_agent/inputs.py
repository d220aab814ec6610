"""Inputs for user kernels: `NAME=SPEC` texts (the CLI's `--arg`, the MCP tools' `args`) parsed into seeded random,
non-zero values."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from repoos_agent.errors import ArgumentSpecError
from repoos_agent.ingest.ranks import CallShapes
from repoos_agent.model.kernel import Kernel

DTYPES = {"f64": np.float64, "f32": np.float32, "i64": np.int64, "i32": np.int32, "b8": np.bool_}
DTYPES |= {"u8": np.uint8, "i8": np.int8, "u32": np.uint32}
BYTE_STRINGS = {"bytes": bytes, "bytearray": bytearray}
"""Byte strings of random bytes (`data=bytes[64]`), for the fsm track's functions."""
_ARRAY = re.compile(r"^(f64|f32|i64|i32|b8|u8|i8|u32|bytes|bytearray)\[([^\]]*)\]$")
_NAME = re.compile(r"^[A-Za-z_]\w*$")
FORMAT = (
    "NAME=VALUE, VALUE an integer (`n=512`), a float (`alpha=1.5`) or TYPE[d0,...] "
    "(`a=f64[512,512]`, TYPE f64|f32|i64|i32|b8|u8|i8|u32, dims integers or integer args; `data=bytes[64]`)"
)


@dataclass(frozen=True)
class InputFields:
    """Where an interface's user types a kernel's inputs: the CLI's options or the MCP tools' parameters.

    A message about inputs names them through this, so that it tells each user what to type where
    they type it (an assistant has no `--arg` to pass)."""

    args: str  # a user kernel's NAME=SPEC inputs
    entry: str  # one of them
    size: str  # a bundled kernel's size class
    listed: bool  # the specs go in one JSON list (MCP), not one option each (CLI)

    def give(self, specs: Sequence[str]) -> str:
        """How to pass `specs` besides the inputs given already, as this interface's user does it."""
        if self.listed:
            return f"add them to {self.args}: {json.dumps(list(specs))}"
        return "give them as " + " ".join(f"{self.args} {spec}" for spec in specs)


CLI_FIELDS = InputFields("--arg", "--arg", "--size", listed=False)
MCP_FIELDS = InputFields("`args`", "`args` entry", "`size`", listed=True)


class InputError(ArgumentSpecError):
    """A kernel's inputs given wrongly or not at all. Its text names the CLI's options (what the CLI, the TUI and
    the runtime print); `for_fields` names another interface's fields."""

    def __init__(self, explain: Callable[[InputFields], str]) -> None:
        super().__init__(explain(CLI_FIELDS))
        self._explain = explain

    def for_fields(self, fields: InputFields) -> str:
        """The message in the words of the interface whose fields are `fields`."""
        return self._explain(fields)


@dataclass(frozen=True)
class ArgSpec:
    """One NAME=SPEC input: a number, or an array's element type and shape (dims may name integer args)."""

    name: str
    number: int | float | None = None
    dtype: str | None = None
    dims: tuple[int | str, ...] = ()


def parse_arg_spec(text: str) -> ArgSpec:
    """`NAME=SPEC` read, or an `InputError` saying what the text should look like."""
    name, sep, value = text.partition("=")
    name, value = name.strip(), value.strip()
    if not sep or not _NAME.match(name) or not value:
        raise _spec_error(text, f"expected {FORMAT}")
    match = _ARRAY.match(value)
    if match:
        dims: list[int | str] = []
        for dim in (d.strip() for d in match.group(2).split(",")):
            if re.fullmatch(r"\d+", dim):
                dims.append(int(dim))
            elif _NAME.match(dim):
                dims.append(dim)
            else:
                raise _spec_error(text, f"dimension `{dim}` is not a non-negative integer or a name")
        return ArgSpec(name, dtype=match.group(1), dims=tuple(dims))
    try:
        return ArgSpec(name, number=int(value))
    except ValueError:
        pass
    try:
        return ArgSpec(name, number=float(value))
    except ValueError:
        raise _spec_error(text, f"`{value}` is not a number or TYPE[dims]; expected {FORMAT}") from None


def ranks_of(specs: Sequence[ArgSpec]) -> CallShapes:
    """The array ranks the inputs give, by argument, and the axes they give as 1 (`f64[n,1]`, or a dim naming an
    integer input of 1): what the model needs of a call's values, and what every command and tool that takes
    inputs passes to the front end."""
    numbers = {spec.name: spec.number for spec in specs if spec.dtype is None}
    arrays = [spec for spec in specs if spec.dtype is not None]
    units = frozenset(
        (spec.name, axis)
        for spec in arrays
        for axis, dim in enumerate(spec.dims)
        if _is_unit(numbers.get(dim) if isinstance(dim, str) else dim)
    )
    return CallShapes({spec.name: len(spec.dims) for spec in arrays}, units)


def _is_unit(extent: int | float | None) -> bool:
    return type(extent) is int and extent == 1


def _spec_error(text: str, reason: str) -> InputError:
    return InputError(lambda fields: f"{fields.entry} `{text}`: {reason}")


def make_inputs(kernel: Kernel, specs: list[ArgSpec], seed: int = 0) -> dict[str, object]:
    """Values for every argument of `kernel`: numbers as given, arrays random in [0.5, 1.5) (or 1..99), and an
    argument left out its default (`eps=1.0`), as a call that leaves it out passes it."""
    by_name = {name: ArgSpec(name, number=value) for name, value in kernel.defaults} | {spec.name: spec for spec in specs}
    unknown = [spec.name for spec in specs if spec.name not in kernel.arguments]
    if unknown:
        names, arguments = ", ".join(unknown), ", ".join(kernel.arguments)
        raise InputError(lambda fields: f"{fields.entry} {names}: `{kernel.name}` has no such argument ({arguments})")
    missing = [name for name in kernel.arguments if name not in by_name]
    if missing:
        examples = [_example_spec(kernel, name) for name in missing]
        raise InputError(lambda fields: f"`{kernel.name}` needs inputs for: {', '.join(missing)}; {fields.give(examples)}")
    rng = np.random.default_rng(seed)
    values: dict[str, object] = {}
    for name in kernel.arguments:
        spec = by_name[name]
        if spec.dtype is None:
            values[name] = spec.number
            continue
        values[name] = random_value(spec.dtype, tuple(dimension(d, by_name, spec) for d in spec.dims), rng)
    return values


def random_value(kind: str, shape: tuple[int, ...], rng: np.random.Generator) -> object:
    """An array of `kind` (a key of `DTYPES`) and `shape`: floats in [0.5, 1.5), integers 1..99; or a byte string
    (`BYTE_STRINGS`) of every byte value, its length the shape's one extent."""
    if kind in BYTE_STRINGS:
        return BYTE_STRINGS[kind](rng.integers(0, 256, size=shape).astype(np.uint8).tobytes())
    dtype = DTYPES[kind]
    if dtype is np.bool_:
        return rng.integers(0, 2, size=shape).astype(dtype)
    if np.issubdtype(dtype, np.integer):
        return rng.integers(1, 100, size=shape).astype(dtype)
    return rng.uniform(0.5, 1.5, size=shape).astype(dtype)


def _example_spec(kernel: Kernel, name: str) -> str:
    """A spec that would do for argument `name`: a size for a parameter, an array of 64s, else a float."""
    rank = next((array.rank for array in kernel.arrays if array.name == name), 0)
    if rank > 0:
        return f"{name}=f64[{','.join(['64'] * rank)}]"
    return f"{name}=64" if name in kernel.parameters else f"{name}=1.5"


def dimension(dim: int | str, by_name: Mapping[str, ArgSpec], spec: ArgSpec) -> int:
    """An extent of `spec`'s shape: as given, or the integer input it names."""
    if isinstance(dim, int):
        return dim
    other = by_name.get(dim)
    if other is None or not isinstance(other.number, int) or other.number < 0:
        raise InputError(lambda fields: f"{fields.entry} {spec.name}: dimension `{dim}` must name a non-negative integer input")
    return other.number
