"""Random byte-level programs through the fsm track: each one the track lowers gives what Python gives, on random
bytes and ints of every size (negative ones included), or the track refuses it; it never answers differently."""

from __future__ import annotations

import numpy as np

from repoos_agent.fsm.compare import difference, outcome
from repoos_agent.fsm.lower import FsmRefusal, parameter_names
from repoos_agent.fsm.native import FsmNative, lower_for
from repoos_agent.ingest.parse import functions, parse_source

PROGRAMS = 30
CALLS = 40


def _operand(rng: np.random.Generator) -> str:
    return str(rng.choice(["x", "y", "byte", str(int(rng.integers(-300, 300))), "k"]))


def _expression(rng: np.random.Generator, depth: int = 2) -> str:
    if depth == 0 or rng.random() < 0.3:
        return _operand(rng)
    operator = str(rng.choice(["+", "-", "*", "^", "|", "&", "<<", ">>", "//", "%"]))
    right = str(int(rng.integers(0, 9))) if operator in ("<<", ">>") else _expression(rng, depth - 1)
    if operator in ("//", "%"):
        right = str(int(rng.choice([-7, -3, 5, 97, 65521])))
    return f"({_expression(rng, depth - 1)} {operator} {right})"


def _statement(rng: np.random.Generator, pad: str) -> list[str]:
    target = str(rng.choice(["x", "y"]))
    mask = str(rng.choice(["0xFF", "0xFFFF", "0xFFFFFFFF", "0x7FFFFFFFFFFF"]))
    kind = rng.integers(0, 4)
    if kind == 0:
        return [f"{pad}{target} = {_expression(rng)} & {mask}"]
    if kind == 1:
        return [f"{pad}{target} = {_expression(rng)}"]
    if kind == 2:
        comparison = str(rng.choice(["<", "<=", ">", "==", "!="]))
        return [
            f"{pad}if {_operand(rng)} {comparison} {_operand(rng)}:",
            *_statement(rng, pad + "    "),
            f"{pad}else:",
            *_statement(rng, pad + "    "),
        ]
    return [f"{pad}if byte == {int(rng.integers(0, 256))}:", f'{pad}    raise ValueError("byte {target}")']


def _program(rng: np.random.Generator) -> str:
    body = [line for _ in range(int(rng.integers(1, 5))) for line in _statement(rng, "        ")]
    return "\n".join(["def f(data, k):", "    x = k & 0xFFFF", "    y = 1", "    for byte in data:", *body, "    return x ^ y", ""])


def test_random_programs_are_refused_or_equal_to_python():
    rng = np.random.default_rng(2026)
    lowered = 0
    for _ in range(PROGRAMS):
        source = _program(rng)
        namespace: dict[str, object] = {}
        exec(compile(source, "random_program.py", "exec"), namespace)  # the original, from the same text
        (node,) = functions(parse_source(source, "random_program.py"))
        try:
            native = FsmNative(lower_for(node, dict(zip(parameter_names(node), (b"", 0), strict=True))), namespace["f"])
        except FsmRefusal:
            continue
        lowered += 1
        for _ in range(CALLS):
            data = rng.integers(0, 256, int(rng.integers(0, 40)), dtype=np.uint8).tobytes()
            k = int(rng.integers(-(2**62), 2**62)) * int(rng.choice([1, 3]))
            want, got = outcome(namespace["f"], (data, k)), outcome(native, (data, k))
            assert difference(want, got) is None, f"{source}\non {data!r}, {k}: {difference(want, got)}"
    assert lowered >= PROGRAMS // 4  # masks and bounded operands make many of them modelled
