"""What every pass shares: its inputs, and a walk that rebuilds the tree offering each loop and call to it.

A pass overrides `loop` (what a loop no earlier pass claimed becomes) and `call`; the nodes earlier
passes made are walked through, their own loop kept (it is theirs) and what they hold offered.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from repoos_agent.codegen.loopnest import BlasCall, Block, Call, For, If, LaneSplit, Let, Node, Promoted, Region, Unrolled, plain
from repoos_agent.model.kernel import Kernel
from repoos_agent.model.signature import Signature
from repoos_agent.schedule import LoweredSchedule


@dataclass(frozen=True)
class PassContext:
    """What a pass reads besides the tree: the kernel, the proved schedule's marks, the argument types."""

    kernel: Kernel
    lowered: LoweredSchedule
    signature: Signature


class NestRewriter:
    """Rebuilds a tree; the default keeps every node as it is."""

    def node(self, node: Node) -> Node:
        if isinstance(node, Block):
            return Block(tuple(self.node(child) for child in node.children))
        if isinstance(node, If):
            otherwise = self.node(node.otherwise) if node.otherwise is not None else None
            return If(node.cond, self.node(node.then), otherwise)
        if isinstance(node, Let):
            return replace(node, body=self.node(node.body))
        if isinstance(node, Call):
            return self.call(node)
        if isinstance(node, For):
            return self.loop(node)
        if isinstance(node, BlasCall):
            return replace(node, initializer=self.node(node.initializer), update=self.node(node.update))
        if isinstance(node, Promoted):
            return replace(node, call=self.call(node.call), fallback=self.node(node.fallback))
        return replace(node, loop=self.inside(node.loop))

    def loop(self, loop: For) -> Node:
        """What `loop` becomes; by default the loop itself, its body rewritten."""
        return self.inside(loop)

    def inside(self, loop: For) -> For:
        return replace(loop, body=self.node(loop.body))

    def call(self, call: Call) -> Call:
        return call


def calls(node: Node) -> list[Call]:
    """Every statement call under `node`, in order."""
    if isinstance(node, Call):
        return [node]
    if isinstance(node, Block):
        return [call for child in node.children for call in calls(child)]
    if isinstance(node, If):
        return calls(node.then) + (calls(node.otherwise) if node.otherwise is not None else [])
    if isinstance(node, (BlasCall, Region, LaneSplit, Unrolled, Promoted)):
        return calls(plain(node))
    return calls(node.body)
