"""What a loop nest needs from a backend, by node kind, and the refusal of a backend that lacks one.

Each printer declares in one table (`SUPPORTED` in `codegen.c`, `codegen.mlir`) the kinds it prints;
`unsupported` names the first kind a nest needs that the table lacks, with the source construct behind
it and the backend to use instead. Besides the tree's node kinds, two needs are the kernel's own: an
index read from an array (`IndexArray`) and a `Failure` reported after the computation.
"""

from __future__ import annotations

from repoos_agent.codegen.loopnest import BlasCall, Block, Call, For, If, Let, LoopNest, Node, Promoted, Region
from repoos_agent.model.kernel import Kernel

KINDS = {
    "For": "loops",
    "Let": "loops that run once",
    "If": "guards",
    "Block": "sequences",
    "Call": "statements",
    "BlasCall": "BLAS calls",
    "Region": "parallel regions",
    "ThreadCopies": "per-thread copies of an array a parallel loop sums into",
    "AtomicCall": "atomic updates",
    "LaneSplit": "sums split across a vector loop's lanes",
    "Unrolled": "unrolled loops",
    "Promoted": "register-promoted loops",
    "IndexArray": "subscripts or loop bounds read from arrays",
    "Failure": "failures reported after the computation",
}
"""Every kind a nest may need, with what it is called in a refusal."""


def needed(kernel: Kernel, nest: LoopNest) -> dict[str, str]:
    """The kinds `nest` needs, each with the first thing in the source that needs it."""
    found: dict[str, str] = {}
    if kernel.irregular:
        found["IndexArray"] = ", ".join(kernel.index_arrays) or "its row pointers"
    if kernel.failures:
        found["Failure"] = kernel.failures[0].message
    _walk(nest.root, found)
    return found


def unsupported(kernel: Kernel, nest: LoopNest, backend: str, supported: frozenset[str], instead: str = "C") -> str | None:
    """Why the `backend` printer, which prints the kinds `supported`, cannot print `nest`, or None."""
    for kind, source in needed(kernel, nest).items():
        if kind not in supported:
            return (
                f"the {backend} backend has no {KINDS[kind]} ({kind}: {source}): build `{kernel.name}` with the {instead} backend"
            )
    return None


def _walk(node: Node, found: dict[str, str]) -> None:
    kind = type(node).__name__
    if isinstance(node, Call):
        found.setdefault(kind, node.statement)
        if node.atomic:
            found.setdefault("AtomicCall", node.statement)
    elif isinstance(node, BlasCall):
        found.setdefault(kind, f"blas({node.call.update})")
        _walk(node.initializer, found)
        _walk(node.update, found)
    elif isinstance(node, Block):
        found.setdefault(kind, "")
        for child in node.children:
            _walk(child, found)
    elif isinstance(node, If):
        found.setdefault(kind, "")
        _walk(node.then, found)
        if node.otherwise is not None:
            _walk(node.otherwise, found)
    elif isinstance(node, (Let, For)):
        found.setdefault(kind, f"`{node.iterator}`")
        _walk(node.body, found)
    elif isinstance(node, Promoted):
        found.setdefault(kind, f"loop `{node.loop.iterator}`")
        _walk(node.call, found)
        _walk(node.fallback, found)
    else:
        found.setdefault(kind, f"loop `{node.loop.iterator}`")
        if isinstance(node, Region) and node.form == "copies":
            found.setdefault("ThreadCopies", ", ".join(f"`{array}`" for array in node.copies))
        _walk(node.loop.body, found)
