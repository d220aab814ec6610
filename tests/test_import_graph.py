"""Data flows one way: no module of the engine or the monitor imports, however indirectly, a module that imports it.

Every import statement counts, the ones inside functions and under `TYPE_CHECKING` too: a
deferred import hides a circle from Python, not from the design (the store importing the
search that records through it, the CLI and the commands it registers importing each other).
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

from tests.conftest import ROOT

PACKAGES = ("repoos_agent", "tui")


def _modules() -> dict[str, Path]:
    modules = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return modules


def _imported(name: str, path: Path, node: ast.Import | ast.ImportFrom, modules: dict[str, Path]) -> set[str]:
    """The project's modules an import statement in module `name` loads (by their longest known prefix)."""
    if isinstance(node, ast.Import):
        wanted = [alias.name for alias in node.names]
    else:
        base = node.module or ""
        if node.level:
            package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
            base = ".".join([*package[: len(package) - node.level + 1], *([base] if base else [])])
        # `from package import module` loads the module; `from module import name` the module itself.
        wanted = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base for alias in node.names]
    found = set()
    for text in wanted:
        while text and text not in modules:
            text = text.rpartition(".")[0]
        if text and text != name:
            found.add(text)
    return found


@cache
def import_graph() -> dict[str, set[str]]:
    """Each module of the packages mapped to the modules of the packages it imports: parsed once for every test here,
    which only read it."""
    modules = _modules()
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        imports = (node for node in ast.walk(tree) if isinstance(node, ast.Import | ast.ImportFrom))
        graph[name] = set().union(*(_imported(name, path, node, modules) for node in imports))
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            module, successors = work[-1]
            successor = next(successors, None)
            if successor is not None:
                if successor not in index:
                    index[successor] = low[successor] = len(index)
                    stack.append(successor)
                    on_stack.add(successor)
                    work.append((successor, iter(sorted(graph[successor]))))
                elif successor in on_stack:
                    low[module] = min(low[module], index[successor])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[module])
            if low[module] == index[module]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == module:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_graph_sees_deferred_and_relative_imports():
    graph = import_graph()
    assert "repoos_agent.store.recording" in graph["repoos_agent.agent.operations"]
    assert "repoos_agent.mcp.server" in graph["repoos_agent.mcp.command"]  # imported inside `serve`
    assert "tui.app" in graph["tui.launch"]  # imported inside `run`
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_module_imports_one_that_imports_it():
    assert circles(import_graph()) == []


def reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    """Every module `start` imports, directly or through others."""
    seen, todo = set(), [start]
    while todo:
        for successor in graph[todo.pop()] - seen:
            seen.add(successor)
            todo.append(successor)
    return seen


def test_the_store_never_reaches_the_agent_nor_a_command_the_cli():
    graph = import_graph()
    for store in (name for name in graph if name.startswith("repoos_agent.store")):
        assert not {name for name in reachable(graph, store) if name.startswith("repoos_agent.agent")}, store
    for command in ("repoos_agent.mcp.command", "tui.command"):
        assert "repoos_agent.cli" not in reachable(graph, command), command


def test_check_imports_neither_the_search_nor_the_study_nor_a_front_end():
    """`repoos check` runs from its own module: what it reaches is what checking needs (the baseline, the evaluation,
    the store), not the agent's search, the study, the MCP server or the TUI, each seconds of imports."""
    reached = reachable(import_graph(), "repoos_agent.commands.check")
    unwanted = ("repoos_agent.agent.search", "repoos_agent.study", "repoos_agent.mcp", "tui", "repoos_agent.fsm.comparison")
    assert {name for name in reached if any(name == other or name.startswith(f"{other}.") for other in unwanted)} == set()


LAYERS = (
    ("errors", "openblas_core", "tracks", "backend_names"),
    ("model", "entry_point"),
    ("ingest", "catalog"),
    ("inputs",),
    ("schedule",),
    ("legality", "codegen"),
    ("verify", "backends"),
    ("verified_nests",),
    ("measure",),
    ("store", "cluster"),
    ("target", "findings"),
    ("check", "evaluate"),
    ("agent",),
    ("search_options", "arguments"),
    ("runtime",),
    ("tabular", "graphs", "fsm", "study"),
    ("mcp", "tui", "repoos_agent", "commands"),
    ("cli",),
    ("__main__",),
)
"""The layers, lowest first, each a tuple of packages (a folder of `repoos_agent`, or `tui`) and top-level modules
(`repoos_agent` is the package's own `__init__`). A module imports its own package's modules and those of lower
layers only: neither a layer above (the store calling the evaluation that records through it) nor a sibling
beside it (the tracks stay apart)."""


def layer_unit(module: str) -> str:
    """The entry of `LAYERS` a module belongs to."""
    package, *rest = module.split(".")
    return package if package == "tui" or not rest else rest[0]


def upward_imports(graph: dict[str, set[str]]) -> set[tuple[str, str]]:
    """Each (importer, imported) pair whose imported module is not in a layer below the importer's own."""
    layer = {unit: number for number, units in enumerate(LAYERS) for unit in units}
    return {
        (module, imported)
        for module, successors in graph.items()
        for imported in successors
        if layer_unit(module) != layer_unit(imported) and layer[layer_unit(imported)] >= layer[layer_unit(module)]
    }


def test_every_package_has_a_layer():
    placed = {unit for units in LAYERS for unit in units}
    assert {layer_unit(module) for module in import_graph()} <= placed
    assert layer_unit("tui.board") == "tui" and layer_unit("repoos_agent") == "repoos_agent"
    assert layer_unit("repoos_agent.store.recording") == "store" and layer_unit("repoos_agent.cli") == "cli"


def test_a_dependence_pointing_up_or_sideways_is_found():
    graph = {"repoos_agent.store.graph": {"repoos_agent.agent.search"}, "repoos_agent.agent.search": {"repoos_agent.model"}}
    graph |= {
        "repoos_agent.tabular.swap": {"repoos_agent.graphs.csr"},
        "repoos_agent.graphs.csr": set(),
        "repoos_agent.model": set(),
    }
    assert upward_imports(graph) == {
        ("repoos_agent.store.graph", "repoos_agent.agent.search"),
        ("repoos_agent.tabular.swap", "repoos_agent.graphs.csr"),
    }


def test_every_import_points_down_the_layers():
    assert upward_imports(import_graph()) == set()
