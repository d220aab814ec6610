"""Parallel regions: each parallel loop becomes a `Region`, and each sum its threads share an atomic call.

A region is outlined into a function of its own by default: in the function OpenMP outlines for an inline
region the arrays come from a shared struct and the compiler no longer knows they do not alias. A loop
that writes a scalar it does not privatize stays inline, where the scalar is the caller's variable. A loop
whose sums into arrays are privatized (`privatize(S1)`) sums into zeroed per-thread copies instead,
added up after the loop; a sum a parallel loop carries otherwise (`legality`'s `atomic`) is updated
atomically, one read-modify-write per instance.
"""

from __future__ import annotations

from dataclasses import replace

from repoos_agent.codegen.loopnest import Call, For, LoopNest, Node, Region
from repoos_agent.codegen.passes.rewrite import NestRewriter, PassContext, calls
from repoos_agent.model.expr import ArrayRef


def outline_regions(nest: LoopNest, context: PassContext) -> LoopNest:
    """`nest` with each parallel loop as a `Region` and each concurrently updated sum marked atomic."""
    return LoopNest(_Regions(context).node(nest.root), nest.bounds)


class _Regions(NestRewriter):
    def __init__(self, context: PassContext) -> None:
        self.kernel = context.kernel
        self.lowered = context.lowered
        self.scalars = {a.name for a in context.kernel.arrays if a.rank == 0}
        self.copied: set[str] = set()  # sums the enclosing region accumulates into per-thread copies
        self.outlined = False  # inside an outlined region's function (which cannot refuse the call for memory)

    def loop(self, loop: For) -> Node:
        if not loop.parallel:
            return self.inside(loop)
        sums = {c.statement for c in calls(loop) if c.statement in self.lowered.privatized}
        if sums and not self.outlined:
            copies = tuple(sorted({self.kernel.statement(name).writes[0].array for name in sums}))
            self.copied |= sums
            inside = self.inside(loop)
            self.copied -= sums
            return Region(inside, "copies", copies)
        if self._writes_shared_scalar(loop):
            return Region(self.inside(loop), "inline")
        outlined, self.outlined = self.outlined, True
        inside = self.inside(loop)
        self.outlined = outlined
        return Region(inside, "outlined")

    def call(self, call: Call) -> Call:
        atomic = call.statement in self.lowered.atomic and call.statement not in self.copied
        return replace(call, atomic=True) if atomic else call

    def _writes_shared_scalar(self, loop: For) -> bool:
        """Whether the loop writes a scalar it does not privatize."""
        shared = self.scalars - loop.private
        for call in calls(loop):
            target = self.kernel.statement(call.statement).target
            if (target.array if isinstance(target, ArrayRef) else target.name) in shared:
                return True
        return False
