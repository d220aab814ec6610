"""Inputs for user kernels: `--arg NAME=SPEC` parsed into seeded random, non-zero values."""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from repoos_agent.errors import ArgumentSpecError
from repoos_agent.model.kernel import Kernel

DTYPES = {"f64": np.float64, "f32": np.float32, "i64": np.int64, "i32": np.int32}
_ARRAY = re.compile(r"^(f64|f32|i64|i32)\[([^\]]*)\]$")
_NAME = re.compile(r"^[A-Za-z_]\w*$")
FORMAT = (
    "NAME=VALUE, VALUE an integer (`n=512`), a float (`alpha=1.5`) or TYPE[d0,...] "
    "(`a=f64[512,512]`, TYPE f64|f32|i64|i32, dims integers or integer args)"
)


@dataclass(frozen=True)
class ArgSpec:
    """One `--arg`: a number, or an array's element type and shape (dims may name integer args)."""

    name: str
    number: int | float | None = None
    dtype: str | None = None
    dims: tuple[int | str, ...] = ()


def parse_arg_spec(text: str) -> ArgSpec:
    name, sep, value = text.partition("=")
    name, value = name.strip(), value.strip()
    if not sep or not _NAME.match(name) or not value:
        raise ArgumentSpecError(f"--arg `{text}`: expected {FORMAT}")
    match = _ARRAY.match(value)
    if match:
        dims: list[int | str] = []
        for dim in (d.strip() for d in match.group(2).split(",")):
            if re.fullmatch(r"\d+", dim):
                dims.append(int(dim))
            elif _NAME.match(dim):
                dims.append(dim)
            else:
                raise ArgumentSpecError(f"--arg `{text}`: dimension `{dim}` is not a non-negative integer or a name")
        return ArgSpec(name, dtype=match.group(1), dims=tuple(dims))
    try:
        return ArgSpec(name, number=int(value))
    except ValueError:
        pass
    try:
        return ArgSpec(name, number=float(value))
    except ValueError:
        raise ArgumentSpecError(f"--arg `{text}`: `{value}` is not a number or TYPE[dims]; expected {FORMAT}") from None


def make_inputs(kernel: Kernel, specs: list[ArgSpec], seed: int = 0) -> dict[str, object]:
    """Values for every argument of `kernel`: numbers as given, arrays random in [0.5, 1.5) (or 1..99)."""
    by_name = {spec.name: spec for spec in specs}
    unknown = [name for name in by_name if name not in kernel.arguments]
    if unknown:
        raise ArgumentSpecError(f"--arg {', '.join(unknown)}: `{kernel.name}` has no such argument ({', '.join(kernel.arguments)})")
    missing = [name for name in kernel.arguments if name not in by_name]
    if missing:
        ranks = {a.name: a.rank for a in kernel.arrays}
        examples = " ".join(
            f"--arg {m}=f64[{','.join(['64'] * ranks[m])}]" if ranks.get(m, 0) > 0 else f"--arg {m}=64" for m in missing
        )
        raise ArgumentSpecError(f"`{kernel.name}` needs inputs for: {', '.join(missing)}; give them as {examples}")
    rng = np.random.default_rng(seed)
    values: dict[str, object] = {}
    for name in kernel.arguments:
        spec = by_name[name]
        if spec.dtype is None:
            values[name] = spec.number
            continue
        shape = tuple(_dimension(d, by_name, spec) for d in spec.dims)
        dtype = DTYPES[spec.dtype]
        if np.issubdtype(dtype, np.integer):
            values[name] = rng.integers(1, 100, size=shape).astype(dtype)
        else:
            values[name] = rng.uniform(0.5, 1.5, size=shape).astype(dtype)
    return values


def _dimension(dim: int | str, by_name: dict[str, ArgSpec], spec: ArgSpec) -> int:
    if isinstance(dim, int):
        return dim
    other = by_name.get(dim)
    if other is None or not isinstance(other.number, int) or other.number < 0:
        raise ArgumentSpecError(f"--arg {spec.name}: dimension `{dim}` must name a non-negative integer --arg")
    return other.number
