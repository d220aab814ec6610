"""`unroll(k, 4)`: a loop the schedule marks for unrolling becomes an `Unrolled` node.

Exact unrolling: the printers copy the body `unroll` times while the last copy is in range,
then run the remainder one by one, so every instance runs once, in order. The unrolled loop
runs in order on one thread: its other marks do not apply (the pass runs first and claims it).
"""

from __future__ import annotations

from repoos_agent.codegen.loopnest import For, LoopNest, Node, Unrolled
from repoos_agent.codegen.passes.rewrite import NestRewriter, PassContext


def unroll_loops(nest: LoopNest, context: PassContext) -> LoopNest:
    """`nest` with each loop marked `unroll` as an `Unrolled` node."""
    return LoopNest(_Unrolling().node(nest.root), nest.bounds)


class _Unrolling(NestRewriter):
    def loop(self, loop: For) -> Node:
        inside = self.inside(loop)
        return Unrolled(inside) if loop.unroll else inside
