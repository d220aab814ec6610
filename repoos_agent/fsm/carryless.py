"""The carry-less product of two 64-bit words (x86's PCLMULQDQ), on every kind of value the track evaluates: Python
ints, NumPy arrays of 64-bit patterns and Z3 bit-vectors.

It is the IR's `clmul` (the product's low 64 bits) and `clmulhi` (its high 64 bits), which no source spells: the
rewrite that folds a CRC sixteen bytes at a time (`rewrites/clmul_fold.py`) writes them. The product is
multiplication of polynomials over GF(2), so it is linear in each operand, which is what lets the step check prove
a fold by linearity. One definition per kind of value here, so the printer's instruction, the proof's evaluators and
the bounded check compute the same function.
"""

from __future__ import annotations

import numpy as np
import z3

WORD = 64
MASK = (1 << WORD) - 1
OPERATORS = ("clmul", "clmulhi")
"""The IR's carry-less operators: the 128-bit product's low and high words."""


def product(a: int, b: int) -> int:
    """The 128-bit carry-less product of the 64-bit patterns of `a` and `b` (two's complement for a negative int)."""
    a, b, result = a & MASK, b & MASK, 0
    while b:
        low = b & -b
        result ^= a << (low.bit_length() - 1)
        b ^= low
    return result


def on_ints(op: str, a: int, b: int) -> int:
    """`op`'s word of the product, as a non-negative int below 2**64."""
    whole = product(a, b)
    return whole & MASK if op == "clmul" else whole >> WORD


def on_arrays(op: str, a: object, b: object) -> np.ndarray:
    """`op` elementwise on int64 patterns (arrays or scalars), as int64 patterns. A constant operand costs a shift
    and an xor per set bit; two arrays cost one per bit."""
    left, right = _patterns(a), _patterns(b)
    if right.ndim and not left.ndim:
        left, right = right, left
    result = np.zeros(np.broadcast(left, right).shape, dtype=np.uint64)
    bits = [int(bit) for bit in range(WORD) if int(right) >> bit & 1] if not right.ndim else range(WORD)
    for bit in bits:
        shifted = _shifted(left, bit, op)
        if shifted is None:
            continue
        if right.ndim:
            shifted = np.where((right >> np.uint64(bit)) & np.uint64(1) != 0, shifted, np.uint64(0))
        result ^= shifted
    return result.view(np.int64)


def on_bitvectors(op: str, a: z3.BitVecRef, b: z3.BitVecRef) -> z3.BitVecRef:
    """`op` on 64-bit Z3 vectors: the xor of `a`'s shifts by each set bit of `b` (of a constant `b`'s alone)."""
    wide_a = z3.ZeroExt(WORD, a)
    known = z3.simplify(b)
    terms = []
    for bit in range(WORD):
        shifted = wide_a << bit
        if z3.is_bv_value(known):
            if known.as_long() >> bit & 1:  # type: ignore[attr-defined]
                terms.append(shifted)
        else:
            terms.append(z3.If(z3.Extract(bit, bit, b) == 1, shifted, z3.BitVecVal(0, 2 * WORD)))
    whole = z3.BitVecVal(0, 2 * WORD)
    for term in terms:
        whole = whole ^ term
    return z3.Extract(WORD - 1, 0, whole) if op == "clmul" else z3.Extract(2 * WORD - 1, WORD, whole)


def _patterns(value: object) -> np.ndarray:
    array = np.asarray(value)
    return array.astype(np.int64).view(np.uint64) if array.dtype != np.uint64 else array


def _shifted(left: np.ndarray, bit: int, op: str) -> np.ndarray | None:
    """`left`'s part of the product for one bit of the other operand, in the word `op` names."""
    if op == "clmul":
        return left << np.uint64(bit)
    return left >> np.uint64(WORD - bit) if bit else None
