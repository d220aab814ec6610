"""The passes between building the loop nest and printing it: each one `LoopNest -> LoopNest`.

`build_loop_nest` turns isl's AST into plain loops carrying the schedule's marks; each pass here
rewrites the marks it owns into a node kind of `codegen.loopnest` (a BLAS call, an unrolled loop, a
register-promoted loop, lane-split sums, a parallel region), so the printers only print and Z3 checks
the tree they print. The order matters where marks meet on one loop: a loop first claimed by an
earlier pass is not offered to a later one (an unrolled loop runs in order, unpromoted and not split).
"""

from __future__ import annotations

from collections.abc import Callable

from repoos_agent.codegen.loopnest import LoopNest, build_loop_nest
from repoos_agent.codegen.passes.blas import substitute_blas
from repoos_agent.codegen.passes.lanes import split_lane_sums
from repoos_agent.codegen.passes.promotion import promote_registers
from repoos_agent.codegen.passes.regions import outline_regions
from repoos_agent.codegen.passes.rewrite import PassContext
from repoos_agent.codegen.passes.unrolling import unroll_loops
from repoos_agent.model.kernel import Kernel
from repoos_agent.model.signature import Signature
from repoos_agent.schedule import LoweredSchedule

NestPass = Callable[[LoopNest, PassContext], LoopNest]

PASSES: tuple[NestPass, ...] = (substitute_blas, unroll_loops, promote_registers, split_lane_sums, outline_regions)
"""Every pass, in the order they run."""


def transformed_nest(kernel: Kernel, lowered: LoweredSchedule, signature: Signature) -> LoopNest:
    """The loop nest of `lowered` after every pass: what the backends print and Z3 verifies. The signature
    is a pass's input where element types decide (a lane split needs the sum in its element's kind)."""
    nest = build_loop_nest(kernel, lowered)
    context = PassContext(kernel, lowered, signature)
    for apply in PASSES:
        nest = apply(nest, context)
    return nest
