"""The polyhedral model: one definition of a kernel that every stage reads."""

from repoos_agent.model.affine import AffineExpr, Bound
from repoos_agent.model.kernel import Access, Array, Condition, Kernel, Loop, ShapeParameter, Statement
from repoos_agent.model.signature import Signature

__all__ = [
    "Access",
    "AffineExpr",
    "Array",
    "Bound",
    "Condition",
    "Kernel",
    "Loop",
    "ShapeParameter",
    "Signature",
    "Statement",
]
