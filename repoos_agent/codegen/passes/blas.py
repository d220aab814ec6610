"""`blas(S1)`: the two nests of a product (its initializer's, then its update's) become one `BlasCall`.

The schedule puts a product's nests side by side (`schedule.products` decided, from the model, which
call computes them); this pass finds them as adjacent children of a block, nested blocks opened, and
replaces the pair. A product whose nests are not adjacent in the tree is an engine bug, refused.
"""

from __future__ import annotations

from repoos_agent.codegen.loopnest import BlasCall, Block, LoopNest, Node
from repoos_agent.codegen.passes.rewrite import NestRewriter, PassContext, calls
from repoos_agent.errors import CompileError
from repoos_agent.schedule.products import ProductCall


def substitute_blas(nest: LoopNest, context: PassContext) -> LoopNest:
    """`nest` with each of the schedule's products as one `BlasCall` where its two nests were."""
    lowered = context.lowered
    if not lowered.blas:
        return nest
    substitution = _Substitution(lowered.blas)
    root = substitution.node(nest.root)
    missing = [call.update for call in lowered.blas if call.update not in substitution.placed]
    if missing:
        raise CompileError(f"blas({missing[0]}): its nests are not adjacent in the generated code (an engine bug)")
    return LoopNest(root, nest.bounds)


class _Substitution(NestRewriter):
    def __init__(self, products: tuple[ProductCall, ...]) -> None:
        self.products = products
        self.placed: set[str] = set()

    def node(self, node: Node) -> Node:
        if not isinstance(node, Block):
            return super().node(node)
        children = _flattened(node)
        ran = [{call.statement for call in calls(child)} for child in children]
        result: list[Node] = []
        k = 0
        while k < len(children):
            product = next((p for p in self.products if ran[k] == {p.initializer}), None)
            if product is not None and k + 1 < len(children) and ran[k + 1] == {product.update}:
                result.append(BlasCall(product, self.node(children[k]), self.node(children[k + 1])))
                self.placed.add(product.update)
                k += 2
                continue
            result.append(self.node(children[k]))
            k += 1
        return Block(tuple(result))


def _flattened(block: Block) -> list[Node]:
    """The children of a block with nested blocks opened: one sequence, in order."""
    return [item for child in block.children for item in (_flattened(child) if isinstance(child, Block) else [child])]
