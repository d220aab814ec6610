"""Affine expressions over loop variables and integer parameters."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class AffineExpr:
    """`sum(coefficient * variable) + constant`, with integer coefficients.

    Terms are kept sorted by variable name so equal expressions compare equal.
    """

    terms: tuple[tuple[str, int], ...] = ()
    constant: int = 0

    @staticmethod
    def of_variable(name: str) -> AffineExpr:
        return AffineExpr(((name, 1),), 0)

    @staticmethod
    def of_constant(value: int) -> AffineExpr:
        return AffineExpr((), value)

    def __add__(self, other: AffineExpr) -> AffineExpr:
        coefficients = dict(self.terms)
        for name, value in other.terms:
            coefficients[name] = coefficients.get(name, 0) + value
        return AffineExpr(_normalised(coefficients), self.constant + other.constant)

    def __neg__(self) -> AffineExpr:
        return self.scaled(-1)

    def __sub__(self, other: AffineExpr) -> AffineExpr:
        return self + (-other)

    def scaled(self, factor: int) -> AffineExpr:
        return AffineExpr(_normalised({n: v * factor for n, v in self.terms}), self.constant * factor)

    @property
    def is_constant(self) -> bool:
        return not self.terms

    @property
    def variables(self) -> frozenset[str]:
        return frozenset(name for name, _ in self.terms)

    def value(self, values: Mapping[str, int]) -> int:
        """The expression's value where each variable has its value in `values`."""
        return self.constant + sum(coefficient * values[name] for name, coefficient in self.terms)

    def __str__(self) -> str:
        """isl and C both read this form: `2*i - n + 3`."""
        parts: list[str] = []
        for name, value in self.terms:
            magnitude = abs(value)
            term = name if magnitude == 1 else f"{magnitude}*{name}"
            parts.append(("- " if value < 0 else "+ ") + term)
        if self.constant or not parts:
            parts.append(("- " if self.constant < 0 else "+ ") + str(abs(self.constant)))
        text = " ".join(parts)
        return text[2:] if text.startswith("+ ") else "-" + text[2:]


def _normalised(coefficients: dict[str, int]) -> tuple[tuple[str, int], ...]:
    return tuple(sorted((n, v) for n, v in coefficients.items() if v != 0))


@dataclass(frozen=True)
class Bound:
    """A loop bound: the `max` (for a lower bound) or `min` (upper) of affine pieces."""

    pieces: tuple[AffineExpr, ...]
    combine: str  # "min" or "max"; irrelevant when there is one piece

    def __str__(self) -> str:
        if len(self.pieces) == 1:
            return str(self.pieces[0])
        return f"{self.combine}({', '.join(str(p) for p in self.pieces)})"

    @property
    def variables(self) -> frozenset[str]:
        return frozenset().union(*(p.variables for p in self.pieces))
