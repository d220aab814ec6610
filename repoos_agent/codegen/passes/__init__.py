"""The passes between building the loop nest and printing it: each one `LoopNest -> LoopNest`.

`build_loop_nest` turns isl's AST into plain loops carrying the schedule's marks; each pass here
rewrites the marks it owns into a node kind of `codegen.loopnest` (a BLAS call, an unrolled loop, a
register-promoted loop, lane-split sums, a parallel region), so the printers only print and Z3 checks
the tree they print. The order matters where marks meet on one loop: a loop first claimed by an
earlier pass is not offered to a later one (an unrolled loop runs in order, unpromoted and not split).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
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


RECENT_NESTS = 8
"""Nests kept for the schedules last asked for: one evaluation asks for its candidate's nest to verify it, then
again to print it (twice for MLIR, whose entry is printed in C), and isl's AST build is most of each."""

_recent: OrderedDict[tuple[int, int, Signature], tuple[Kernel, LoweredSchedule, LoopNest]] = OrderedDict()
_recent_lock = threading.Lock()


def transformed_nest(kernel: Kernel, lowered: LoweredSchedule, signature: Signature) -> LoopNest:
    """The loop nest of `lowered` after every pass: what the backends print and Z3 verifies. The signature
    is a pass's input where element types decide (a lane split needs the sum in its element's kind).

    A nest is a value (frozen nodes) of the kernel and the lowered schedule it came from, so the one built last
    for the same two objects is returned again (held here, they keep their identities)."""
    key = (id(kernel), id(lowered), signature)
    with _recent_lock:
        kept = _recent.get(key)
        if kept is not None and kept[0] is kernel and kept[1] is lowered:
            _recent.move_to_end(key)
            return kept[2]
    nest = _transformed(kernel, lowered, signature)
    with _recent_lock:
        _recent[key] = (kernel, lowered, nest)
        while len(_recent) > RECENT_NESTS:
            _recent.popitem(last=False)
    return nest


def _transformed(kernel: Kernel, lowered: LoweredSchedule, signature: Signature) -> LoopNest:
    nest = build_loop_nest(kernel, lowered)
    context = PassContext(kernel, lowered, signature)
    for apply in PASSES:
        nest = apply(nest, context)
    return nest
