"""Lane-split sums (`legality.lane_reduction`): a vector loop's sums become `LaneSplit` partial sums.

Each sum the loop splits goes into a partial-sum variable every lane keeps a copy of, and is combined
into its element once, after the loop. Only a sum the loop runs on every iteration (a call directly in
its body, under no guard) and whose value is of the element's kind takes that path: partial sums of
another kind would round where the source does not. Otherwise the loop runs in order, unvectorized.
"""

from __future__ import annotations

from dataclasses import replace

from repoos_agent.codegen.loopnest import Block, Call, For, LaneSplit, LaneSum, LoopNest, Node, substitute
from repoos_agent.codegen.numeric import kind_environment, promote
from repoos_agent.codegen.passes.rewrite import NestRewriter, PassContext


def split_lane_sums(nest: LoopNest, context: PassContext) -> LoopNest:
    """`nest` with each vector loop that splits sums as a `LaneSplit`, or in order where it cannot split them."""
    return LoopNest(_Lanes(context).node(nest.root), nest.bounds)


class _Lanes(NestRewriter):
    def __init__(self, context: PassContext) -> None:
        self.kernel = context.kernel
        self.kinds = kind_environment(context.kernel, context.signature)
        self.active: dict[str, str] = {}  # sums of the enclosing splits -> their partial sums' variables

    def loop(self, loop: For) -> Node:
        if not (loop.vector and loop.lane_sums):
            return self.inside(loop)
        children = loop.body.children if isinstance(loop.body, Block) else (loop.body,)
        calls = {c.statement: c for c in children if isinstance(c, Call) and c.statement in loop.lane_sums}
        names = sorted(loop.lane_sums)
        if set(calls) != loop.lane_sums or not all(self._in_its_kind(name) for name in names):
            return replace(self.inside(loop), vector=None, lane_sums=frozenset(), parallel=False, private=frozenset())
        variables = {name: f"rp_lane{len(self.active) + k}" for k, name in enumerate(names)}
        sums = tuple(
            LaneSum(name, variables[name], Call(name, tuple(substitute(a, loop.iterator, loop.init) for a in calls[name].args)))
            for name in names
        )
        self.active.update(variables)
        inside = self.inside(loop)
        for name in variables:
            del self.active[name]
        return LaneSplit(inside, sums)

    def call(self, call: Call) -> Call:
        return replace(call, lane=self.active[call.statement]) if call.statement in self.active else call

    def _in_its_kind(self, name: str) -> bool:
        """Whether `t += e` (or `t = max(t, e)`) computes in `t`'s own kind: then partial sums (or extrema) of `e`
        combined into `t` mean what the source does."""
        statement = self.kernel.statement(name)
        target = self.kinds.kind_of(statement.target)
        return promote(target, self.kinds.kind_of(statement.value)) == target
