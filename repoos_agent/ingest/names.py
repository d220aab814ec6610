"""What imported names stand for: `xp` for NumPy, `sqrt` for `np.sqrt`, `m` for `math`.

Code imports NumPy in every way Python allows (`import numpy as xp`, `from numpy import
sqrt, empty_like`, an `import` inside the function), and the front ends recognise NumPy and
math calls by name. The module's imports and the function's own are read once into a
`ModuleNames`, and the front ends ask it for the canonical spelling (`np.sqrt`, `math.pi`)
instead of matching `np` and `numpy` themselves.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from tree_sitter import Node

from repoos_agent.ingest.parse import text

CANONICAL_MODULES = {"numpy": "np", "math": "math"}
"""The modules whose functions the front ends model, by import name, and how the front ends spell them."""


@dataclass(frozen=True)
class ModuleNames:
    """Local names bound to NumPy and math: modules (`xp` -> `np`) and their attributes (`sqrt` -> `np.sqrt`)."""

    modules: dict[str, str] = field(default_factory=lambda: {"np": "np", "numpy": "np", "math": "math"})
    attributes: dict[str, str] = field(default_factory=dict)
    constants: dict[str, int | float] = field(default_factory=dict)  # `BET_M = 0.5` at module level, bound once

    def canonical(self, dotted: str) -> str:
        """`dotted` spelled as the front ends know it: `xp.linalg.norm` -> `np.linalg.norm`, `sqrt` -> `np.sqrt`;
        anything else unchanged."""
        head, dot, rest = dotted.partition(".")
        if head in self.attributes:
            return self.attributes[head] + dot + rest
        if head in self.modules:
            return self.modules[head] + dot + rest
        return dotted

    def is_numpy(self, dotted: str) -> bool:
        """Whether `dotted` names the NumPy module itself (`np`, `numpy`, `xp`)."""
        return self.canonical(dotted) == "np"

    def with_imports(self, statements: Iterable[Node]) -> ModuleNames:
        """These names, and those the `import` statements among `statements` bind."""
        modules, attributes = dict(self.modules), dict(self.attributes)
        for node in statements:
            if node.type == "import_statement":
                for item in node.named_children:
                    module, alias = _aliased(item)
                    if module in CANONICAL_MODULES:
                        modules[alias] = CANONICAL_MODULES[module]
            elif node.type == "import_from_statement":
                module = text(node.child_by_field_name("module_name"))
                if module not in CANONICAL_MODULES:
                    continue
                for item in node.children_by_field_name("name"):
                    name, alias = _aliased(item)
                    attributes[alias] = f"{CANONICAL_MODULES[module]}.{name}"
        return ModuleNames(modules, attributes, self.constants)

    def with_constants(self, statements: Iterable[Node]) -> ModuleNames:
        """These names, and the module's numeric constants: names bound once, to a number written out."""
        bound: dict[str, list[Node]] = {}
        for node in statements:
            if node.type == "expression_statement" and node.named_children[0].type == "assignment":
                assignment = node.named_children[0]
                for target in _names_bound(assignment.child_by_field_name("left")):
                    bound.setdefault(target, []).append(assignment.child_by_field_name("right"))
        constants = dict(self.constants)
        for name, values in bound.items():
            number = _number(values[0]) if len(values) == 1 and values[0] is not None else None
            if number is not None:
                constants[name] = number
        return ModuleNames(self.modules, self.attributes, constants)


def _names_bound(target: Node | None) -> list[str]:
    if target is None:
        return []
    if target.type == "identifier":
        return [text(target)]
    return [name for child in target.named_children for name in _names_bound(child)]


def _number(node: Node) -> int | float | None:
    """`0.5`, `-3`, `1e-9`: a number written out, else None."""
    sign = 1
    if node.type == "unary_operator" and text(node.child_by_field_name("operator")) in "-+":
        sign = -1 if text(node.child_by_field_name("operator")) == "-" else 1
        node = node.child_by_field_name("argument")
    if node.type == "integer":
        return sign * int(text(node).replace("_", ""), 0)
    if node.type == "float" and text(node)[-1:] not in "jJ":
        return sign * float(text(node).replace("_", ""))
    return None


def _aliased(item: Node) -> tuple[str, str]:
    """(`numpy`, `xp`) for `numpy as xp`, (`numpy`, `numpy`) for a plain `numpy`."""
    if item.type == "aliased_import":
        return text(item.child_by_field_name("name")), text(item.child_by_field_name("alias"))
    return text(item), text(item)
