"""Private scalars, checked on the generated nest: every read of one sees the value the sequential nest would.

Each thread of a parallel loop gets a fresh, uninitialised copy of the loop's private
scalars (`For.private`), and the function's own variable keeps the value it had
before the loop. The race check (translation, (c)) therefore leaves those scalars out
of that loop, and this check supplies the rest without trusting legality: it walks
the nest in execution order with the set of scalars whose visible copy certainly
holds the sequential value. A private scalar leaves the set at the start of every
iteration of its loop and after the loop, and comes back only through an assignment
that certainly runs before the read (not one under an `if`, nor inside a loop that
may run no iteration). Reading a scalar outside the set is refuted. The walk is
structural: it may refuse a correct nest (a write isl placed under a guard), never
accept a wrong one.
"""

from __future__ import annotations

from dataclasses import dataclass

from repoos_agent.codegen.loopnest import WRAPPERS, Block, Call, For, If, Let, Node, plain
from repoos_agent.model.expr import Name, names
from repoos_agent.model.kernel import Kernel, Statement


@dataclass(frozen=True)
class StaleRead:
    """A read of a private scalar whose copy may not hold the value the sequential nest computed."""

    statement: Statement
    scalar: str


class _Stale(Exception):
    def __init__(self, read: StaleRead) -> None:
        super().__init__(read.scalar)
        self.read = read


def stale_read(kernel: Kernel, root: Node) -> StaleRead | None:
    """The first read (in nest order) of a private scalar that may see a stale copy, or None."""
    scalars = frozenset(a.name for a in kernel.arrays if a.rank == 0)
    try:
        _Walk(kernel, scalars).node(root, scalars)
    except _Stale as stale:
        return stale.read
    return None


class _Walk:
    def __init__(self, kernel: Kernel, scalars: frozenset[str]) -> None:
        self.kernel = kernel
        self.scalars = scalars

    def node(self, node: Node, valid: frozenset[str]) -> frozenset[str]:
        """The scalars certainly valid after `node`, given those valid before it."""
        if isinstance(node, WRAPPERS):
            return self.node(plain(node), valid)
        if isinstance(node, Block):
            for child in node.children:
                valid = self.node(child, valid)
            return valid
        if isinstance(node, If):
            otherwise = self.node(node.otherwise, valid) if node.otherwise is not None else valid
            return self.node(node.then, valid) & otherwise
        if isinstance(node, Let):
            return self.node(node.body, valid)
        if isinstance(node, Call):
            return self.call(self.kernel.statement(node.statement), valid)
        return self.loop(node, valid)

    def loop(self, node: For, valid: frozenset[str]) -> frozenset[str]:
        """Iterations after the first start from what the previous one left: iterate to a fixed point
        (the set only shrinks). The loop may run no iteration, so afterwards only what held before
        and after the body holds, less the private scalars, whose outer copy missed the loop's writes."""
        entry = valid - node.private
        while True:
            leaving = self.node(node.body, entry)
            following = entry & (leaving - node.private)
            if following == entry:
                return (valid & leaving) - node.private
            entry = following

    def call(self, statement: Statement, valid: frozenset[str]) -> frozenset[str]:
        reads = set(names(statement.value)) & self.scalars
        target = statement.target
        if isinstance(target, Name) and statement.op != "=":
            reads.add(target.name)
        stale = sorted(reads - valid)
        if stale:
            raise _Stale(StaleRead(statement, stale[0]))
        return valid | {target.name} if isinstance(target, Name) else valid
