"""clmul-fold: a bitwise CRC folded 16 bytes at a time by carry-less products. Each variant equals the Python
original through its native build, across chunk edges and for a register outside its width, and `prove` proves
it by linearity; a fold constant wrong in one bit is refuted; the product is the same function in Python, NumPy,
Z3 and both C paths (PCLMULQDQ and the portable loop)."""

from __future__ import annotations

import ctypes
import random
import subprocess
from dataclasses import fields, is_dataclass, replace
from pathlib import Path

import numpy as np
import pytest
import z3

from repoos_agent.fsm import carryless, ir
from repoos_agent.fsm.native import FsmNative
from repoos_agent.fsm.print_c import PRELUDE
from repoos_agent.fsm.proof import NOT_APPLICABLE, PROVED, REFUTED, prove
from repoos_agent.fsm.rewrites import NotApplicable, Step, apply_steps
from tests.test_fsm_rewrites_crc import CASES

LENGTHS = (0, 1, 15, 63, 64, 65, 127, 255, 256, 257, 511, 1023, 1024, 1025, 3000)


def _mapped(value: object, change) -> object:
    """`value` (IR nodes, tuples of them) rebuilt bottom-up, each expression replaced by `change` of it."""
    if isinstance(value, tuple):
        return tuple(_mapped(item, change) for item in value)
    if is_dataclass(value) and not isinstance(value, type):
        rebuilt = replace(value, **{part.name: _mapped(getattr(value, part.name), change) for part in fields(value)})
        return change(rebuilt) if isinstance(rebuilt, ir.Expr) else rebuilt
    return value


def _inputs(seed: int) -> list[bytes]:
    rng = random.Random(seed)
    return [rng.randbytes(n) for n in LENGTHS] + [b"\xff" * 300, bytes(300)]


FOLDS = [(name, 256) for name in sorted(CASES)] + [("crc32", 64), ("crc16_ccitt", 1024)]
"""Every CRC at the default chunk (MSB-first and reflected, 8 to 32 bits), and the other chunks on one of each."""


@pytest.mark.parametrize(("name", "chunk"), FOLDS)
def test_every_crc_folded_equals_its_original_and_is_proved_by_linearity(name, chunk):
    baseline, original, takes_crc = CASES[name]
    variant = apply_steps(baseline, (Step("clmul-fold", {"chunk": chunk}),)).function
    proof = prove(baseline, variant)
    assert proof.verdict == PROVED and "linearity" in proof.method, proof.reason
    native = FsmNative(variant, original)
    for data in _inputs(chunk):
        assert native(data) == original(data), len(data)
        if takes_crc:  # a register past its width at the loop takes the original loop
            for crc in (0, 1, 0xFFFF, 0xFFFFFFFF, 1 << 40, -2):
                assert native(data, crc) == original(data, crc), (len(data), crc)


def test_a_fold_constant_wrong_in_one_bit_is_refuted():
    baseline, _, _ = CASES["crc32"]
    variant = apply_steps(baseline, (Step("clmul-fold", {"chunk": 256}),)).function
    flipped = []

    def tamper(expr: ir.Expr) -> ir.Expr:
        if isinstance(expr, ir.Binary) and expr.op == "clmul" and isinstance(expr.right, ir.Const) and not flipped:
            flipped.append(expr.right.value)
            return replace(expr, right=replace(expr.right, value=expr.right.value ^ (1 << 40)))
        return expr

    wrong = replace(variant, body=_mapped(variant.body, tamper))
    assert flipped
    proof = prove(baseline, wrong)
    assert proof.verdict == REFUTED and proof.counterexample is not None, proof.reason


def test_a_word_read_where_its_sign_would_matter_is_not_proved():
    baseline, _, _ = CASES["crc32"]
    variant = apply_steps(baseline, (Step("clmul-fold", {"chunk": 64}),)).function

    def widen(expr: ir.Expr) -> ir.Expr:  # `(lane >> 56) & 0xFF` read with one bit more: the word's sign shows
        shifted = isinstance(expr, ir.Binary) and expr.op == "&" and isinstance(expr.left, ir.Binary)
        if shifted and expr.left.op == ">>" and expr.left.right == ir.Const(56, expr.line):  # type: ignore[union-attr]
            return replace(expr, right=ir.Const(0x1FF, expr.line))
        return expr

    proof = prove(baseline, replace(variant, body=_mapped(variant.body, widen)))
    assert proof.verdict == NOT_APPLICABLE and "unsigned" in proof.reason, proof.reason


def test_a_function_without_a_bitwise_crc_is_refused_with_the_reason():
    baseline, _, _ = CASES["crc32"]
    with pytest.raises(NotApplicable, match=r"clmul-fold: .*no `for` loop over a byte sequence"):
        apply_steps(replace(baseline, body=baseline.body[:1] + baseline.body[2:]), (Step("clmul-fold"),))


def test_the_product_is_one_function_in_python_numpy_and_z3():
    rng = random.Random(7)
    pairs = [(rng.getrandbits(64), rng.getrandbits(64)) for _ in range(64)] + [(1 << 63, 1 << 63), (0, 5), (3, 3)]
    for op in carryless.OPERATORS:
        expected = [carryless.on_ints(op, a, b) for a, b in pairs]
        left = np.array([a for a, _ in pairs], dtype=np.uint64).view(np.int64)
        right = np.array([b for _, b in pairs], dtype=np.uint64).view(np.int64)
        assert carryless.on_arrays(op, left, right).view(np.uint64).tolist() == expected
        constant = pairs[0][1]
        assert carryless.on_arrays(op, left, np.uint64(constant)).view(np.uint64).tolist() == [
            carryless.on_ints(op, a, constant) for a, _ in pairs
        ]
        a, b = z3.BitVecs("a b", 64)
        for (x, y), want in list(zip(pairs, expected, strict=True))[:8]:
            got = z3.simplify(z3.substitute(carryless.on_bitvectors(op, a, b), (a, z3.BitVecVal(x, 64)), (b, z3.BitVecVal(y, 64))))
            assert got.as_long() == want  # type: ignore[attr-defined]
    assert carryless.product(0b11, 0b11) == 0b101  # (x + 1)^2 = x^2 + 1 over GF(2)


@pytest.mark.parametrize("flags", [["-mpclmul"], ["-mno-pclmul"]], ids=["pclmulqdq", "portable"])
def test_the_c_helpers_compute_the_product_on_both_paths(tmp_path: Path, flags):
    source = tmp_path / "clmul.c"
    source.write_text(
        PRELUDE
        + "\nuint64_t lo(uint64_t a, uint64_t b) { return rp_clmul(a, b); }"
        + "\nuint64_t hi(uint64_t a, uint64_t b) { return rp_clmulhi(a, b); }\n"
    )
    library = tmp_path / "clmul.so"
    built = subprocess.run(["cc", "-O2", "-shared", "-fPIC", *flags, "-o", library, source], capture_output=True, text=True)
    if built.returncode != 0 and "-mpclmul" in flags:
        pytest.skip(f"this compiler does not build PCLMULQDQ: {built.stderr.splitlines()[:1]}")
    assert built.returncode == 0, built.stderr
    native = ctypes.CDLL(str(library))
    for name in ("lo", "hi"):
        getattr(native, name).restype = ctypes.c_uint64
        getattr(native, name).argtypes = [ctypes.c_uint64, ctypes.c_uint64]
    rng = random.Random(3)
    for _ in range(200):
        a, b = rng.getrandbits(64), rng.getrandbits(64)
        assert native.lo(a, b) == carryless.on_ints("clmul", a, b)
        assert native.hi(a, b) == carryless.on_ints("clmulhi", a, b)
