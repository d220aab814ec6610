"""The polyhedral model: one definition of a kernel that every stage reads."""

from repoos_agent.model.affine import AffineExpr, Bound
from repoos_agent.model.kernel import (
    Access,
    Allocation,
    Array,
    Condition,
    DtypeRule,
    Extent,
    Kernel,
    Loop,
    ReturnValue,
    ShapeParameter,
    Statement,
)
from repoos_agent.model.signature import Signature

__all__ = [
    "Access",
    "AffineExpr",
    "Allocation",
    "Array",
    "Bound",
    "Condition",
    "DtypeRule",
    "Extent",
    "Kernel",
    "Loop",
    "ReturnValue",
    "ShapeParameter",
    "Signature",
    "Statement",
]
