"""The fsm track's registration (`repoos_agent.tracks`): branchy byte-level code (state machines, parsers,
checksums) that the loop model refused, lowered to the fsm IR and compiled to one C function.

Its claim is asked after the loop model, so it never takes a loop nest. It takes a refused function that is
branch-heavy (control flow decided by data) or that shows byte-level code's constructs (a `while` loop, `break`,
`raise`, a loop over a sequence's elements, bit operations), and says whether the function lowers: without a
call, its parameters are typed by their annotations, else as bytes where they are indexed and ints elsewhere.
`repoos check FILE.py:f --arg data=bytes[64]` types them from the inputs, builds the C and compares it with the
Python original.
"""

from __future__ import annotations

import argparse
import ast
import json
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import numpy as np
from tree_sitter import Node

from repoos_agent.catalog import SIZE_CLASSES, bundled_ranks, find_bundled
from repoos_agent.errors import ArgumentSpecError, RepoosError, SourceError
from repoos_agent.fsm import ir
from repoos_agent.fsm.compare import difference, outcome
from repoos_agent.fsm.comparison import evaluate
from repoos_agent.fsm.lower import (
    CHARACTER_TESTS,
    FsmRefusal,
    lower_function,
    module_functions,
    parameter_defaults,
    parameter_names,
)
from repoos_agent.fsm.native import FsmNative, lower_for
from repoos_agent.fsm.print_c import print_c
from repoos_agent.fsm.proposals import ProposalError, parse_proposal
from repoos_agent.fsm.ranges import check_widths
from repoos_agent.fsm.rewrites.registry import NotApplicable, apply_steps
from repoos_agent.ingest.classify import walk
from repoos_agent.ingest.parse import functions, parse_source, read_source, text
from repoos_agent.inputs import ArgSpec, InputError, dimension, parse_arg_spec, random_value
from repoos_agent.store import FsmKernel, function_key, missing_store, open_store
from repoos_agent.target import ModuleFunction, target_file
from repoos_agent.tracks import Track

BRANCH_NODES = frozenset({"if_statement", "elif_clause", "else_clause", "while_statement", "case_clause"})
FSM_BRANCH_THRESHOLD = 3
BYTE_LEVEL = {
    "while_statement": "a `while` loop",
    "break_statement": "`break`",
    "continue_statement": "`continue`",
    "raise_statement": "`raise`",
}
BIT_OPERATORS = frozenset({"&", "|", "^", "<<", ">>", "%", "&=", "|=", "^=", "<<=", ">>=", "%="})
ANNOTATED = {"bytes": ir.BYTES, "bytearray": ir.BYTEARRAY}


def fsm_reason(function: Node) -> str | None:
    """Branch-heavy procedural code: control flow decided by data, not by loop bounds."""
    branches = sum(1 for node in walk(function) if node.type in BRANCH_NODES)
    loops = sum(1 for node in walk(function) if node.type == "for_statement")
    if branches >= FSM_BRANCH_THRESHOLD and branches > loops:
        return f"{branches} branches against {loops} loops: control flow is decided by data"
    return None


def byte_level(function: Node) -> list[str]:
    """The constructs of byte-level code `function` uses, named in source order, once each."""
    found: dict[str, None] = {}
    for node in sorted(walk(function), key=lambda node: node.start_byte):
        if node.type in BYTE_LEVEL:
            found[BYTE_LEVEL[node.type]] = None
        elif node.type == "for_statement" and not text(node.child_by_field_name("right")).startswith("range("):
            found["a loop over a sequence's elements"] = None
        elif (
            node.type in ("binary_operator", "augmented_assignment") and text(node.child_by_field_name("operator")) in BIT_OPERATORS
        ):
            found["bit operations"] = None
    return list(found)


def _operator(node: Node) -> str:
    return text(node.child_by_field_name("operator"))


def claim(function: Node, path: str) -> str | None:
    """A function the loop model refused is this track's when it is branch-heavy, or byte-level and lowers."""
    branchy, constructs = fsm_reason(function), byte_level(function)
    if branchy is None and not constructs:
        return None
    why = branchy or "byte-level code (" + ", ".join(constructs) + ")"
    try:
        types = assumed_types(function)
        check_widths(lower_function(function, types))
    except FsmRefusal as refusal:
        return f"{why}; not lowered: {refusal}" if branchy else None
    typed = ", ".join(f"`{name}` as {kind.kind if isinstance(kind, ir.Sequence) else 'an int'}" for name, kind in types.items())
    return f"{why}: lowers to the fsm IR taking {typed or 'no arguments'}"


def assumed_types(function: Node) -> dict[str, ir.Sequence | str]:
    """Parameters typed without a call: by their default (an int, or a table's `bytes` or tuple of ints) or their
    annotation (`bytes`, `bytearray`, `str`, `int`), else a `str` where the function reads it as text (its elements
    compared with one-character strings, tested as characters or passed to `ord`), else a sequence where the
    function indexes, iterates or measures it (a `bytearray` where it writes it), else an int."""
    indexed, written = set(), set()
    textual = _textual(function, frozenset({text(function.child_by_field_name("name"))}))
    for node in walk(function):
        if node.type == "subscript":
            indexed.add(text(node.child_by_field_name("value")))
        elif node.type == "for_statement":
            iterated = node.child_by_field_name("right")
            if iterated.type == "call" and text(iterated.child_by_field_name("function")) in ("enumerate", "reversed"):
                iterated = next(iter(iterated.child_by_field_name("arguments").named_children), iterated)
            indexed.add(text(iterated))
        elif node.type == "call" and text(node.child_by_field_name("function")) == "len":
            indexed.update(text(argument) for argument in node.child_by_field_name("arguments").named_children)
        elif node.type in ("assignment", "augmented_assignment"):
            left = node.child_by_field_name("left")
            if left.type == "subscript":
                written.add(text(left.child_by_field_name("value")))
    annotations = {
        text(child.named_children[0]): text(child.child_by_field_name("type"))
        for child in function.child_by_field_name("parameters").named_children
        if child.type == "typed_parameter"
    }
    types: dict[str, ir.Sequence | str] = {}
    defaults = parameter_defaults(function)
    for name in parameter_names(function):
        annotated = annotations.get(name)
        if type(defaults.get(name)) is bytes:
            types[name] = ir.Sequence(name, ir.BYTES)
        elif type(defaults.get(name)) is tuple:
            types[name] = ir.Sequence(name, ir.INTS, "int64")
        elif name in defaults:
            types[name] = ir.INT
        elif annotated in ANNOTATED:
            types[name] = ir.Sequence(name, ANNOTATED[annotated])
        elif annotated == "str" or (name in textual and name not in written):
            types[name] = ir.Sequence(name, ir.TEXT, "uint32")
        elif annotated == "int" or name not in indexed:
            types[name] = ir.INT
        else:
            types[name] = ir.Sequence(name, ir.BYTEARRAY if name in written else ir.BYTES)
    return types


def _parameters(function: Node) -> list[str]:
    try:
        return parameter_names(function)
    except FsmRefusal:
        return []  # a helper with parameters the track does not take says nothing about its caller's


def _textual(function: Node, visiting: frozenset[str] = frozenset()) -> set[str]:
    """The parameters the function reads as text: checked with `isinstance(x, str)`, or whose elements (`x[i]`, or
    `c` in `for c in x`) are compared with a one-character string literal, tested with `.isdigit()` and the like,
    or passed to `ord`."""
    element_of: dict[str, str] = {}
    for node in walk(function):
        if node.type == "for_statement" and node.child_by_field_name("left").type == "identifier":
            iterated = node.child_by_field_name("right")
            if iterated.type == "call" and text(iterated.child_by_field_name("function")) == "reversed":
                iterated = next(iter(iterated.child_by_field_name("arguments").named_children), iterated)
            element_of[text(node.child_by_field_name("left"))] = text(iterated)
        elif (
            node.type == "assignment"
            and (right := node.child_by_field_name("right")) is not None
            and right.type == "subscript"
            and node.child_by_field_name("left").type == "identifier"
        ):
            element_of[text(node.child_by_field_name("left"))] = text(right.child_by_field_name("value"))

    def owner(node: Node) -> str | None:
        if node.type == "subscript":
            return text(node.child_by_field_name("value"))
        return element_of.get(text(node), text(node)) if node.type == "identifier" else None

    helpers = module_functions(function)

    found = set()
    for node in walk(function):
        if node.type == "comparison_operator" and any(_one_character(operand) for operand in node.named_children):
            found.update(name for operand in node.named_children if (name := owner(operand)) is not None)
        elif node.type == "call":
            callee, arguments = node.child_by_field_name("function"), node.child_by_field_name("arguments").named_children
            if text(callee) == "ord" and len(arguments) == 1 and (name := owner(arguments[0])) is not None:
                found.add(name)
            elif text(callee) == "isinstance" and len(arguments) == 2 and text(arguments[1]) == "str":
                found.add(text(arguments[0]))
            elif callee.type == "attribute" and text(callee.child_by_field_name("attribute")) in CHARACTER_TESTS:
                name = owner(callee.child_by_field_name("object"))
                found.update([name] if name is not None else [])
            elif text(callee) in helpers and text(callee) not in visiting:
                helper = helpers[text(callee)]
                characters = _textual(helper, visiting | {text(callee)})  # a helper's parameter read as a character
                for parameter, argument in zip(_parameters(helper), arguments, strict=False):
                    if parameter in characters and (name := owner(argument)) is not None:
                        found.add(name)
    return found


def _one_character(node: Node) -> bool:
    return (
        node.type == "string"
        and not any(child.type == "interpolation" for child in node.named_children)
        and len(ast.literal_eval(text(node))) == 1
        and isinstance(ast.literal_eval(text(node)), str)
    )


def check(args: argparse.Namespace) -> int:
    """`repoos check FILE.py:f --arg data=bytes[64]` (or a bundled kernel, `fsm:crc32 --size SMALL`): the C baseline
    against the Python original on those inputs (with `--no-measure`, built only). A parameter with a default that
    the inputs leave out is left out of the call too, so both take the default as a caller's call would."""
    path, name, function, original, arguments = target_inputs(args)
    try:
        native = FsmNative(lower_for(function, dict(zip(parameter_names(function), arguments, strict=False))), original)
    except FsmRefusal as refusal:
        raise FsmRefusal(refusal.line, f"`{name}` is not modelled by the fsm track: {refusal.reason}", path) from None
    if args.no_measure:  # built, and nothing run
        if args.json:
            print(json.dumps({"target": args.target, "track": "fsm", "built": native.library.name, "measured": False}, indent=2))
        else:
            print(f"{args.target}: fsm track, built {native.library.name} (--no-measure: not run, not timed)")
        return 0
    start = time.perf_counter()
    want = outcome(original, arguments)
    python_s = time.perf_counter() - start
    start = time.perf_counter()
    got = outcome(native, arguments)
    native_s = time.perf_counter() - start
    problem = difference(want, got)
    if args.json:
        payload = {"target": args.target, "track": "fsm", "correct": problem is None, "difference": problem}
        print(json.dumps(payload | {"original": want.describe(), "python_s": python_s, "native_s": native_s}, indent=2))
        return 0 if problem is None else 1
    verdict = "correct" if problem is None else f"INCORRECT: {problem}"
    print(f"{args.target}: fsm track, {verdict} ({want.describe()})")
    print(f"  python  {python_s:10.6f} s")
    print(f"  native  {native_s:10.6f} s  (one call, {native.library.name})")
    return 0 if problem is None else 1


def show(args: argparse.Namespace) -> int:
    """`repoos show FILE.py:f --arg data=bytes[64]` (or `fsm:crc32`): the C the track builds for the inputs' types,
    of the baseline or, given a proposal (`slicing(k=8)`), of that variant; it builds and runs nothing."""
    if args.mlir:
        raise RepoosError(f"{args.target}: the fsm track prints C only; leave out --mlir")
    path, name, function, _, arguments = read_target(args.target, args.arg, args.size)
    try:
        lowered = lower_for(function, dict(zip(parameter_names(function), arguments, strict=False)))
        shown = lowered if args.schedule is None else _variant(lowered, args.schedule)
        print(print_c(shown, check_widths(shown)), end="")
    except FsmRefusal as refusal:
        raise FsmRefusal(refusal.line, f"`{name}` is not modelled by the fsm track: {refusal.reason}", path) from None
    return 0


def _variant(function: ir.Function, proposal: str) -> ir.Function:
    """`function` rewritten by `proposal`, or why not, naming the proposal: the token and column where it does not
    parse, the rewrite and the reason where it does not apply."""
    try:
        return apply_steps(function, parse_proposal(proposal)).function
    except (ProposalError, NotApplicable) as error:
        raise RepoosError(f"proposal `{proposal}`: {error}") from None


def target_inputs(args: argparse.Namespace) -> tuple[Path, str, Node, Callable[..., object], list[object]]:
    """The file, name, syntax tree and Python original of `args.target` (`FILE.py:f`, or a bundled kernel such as
    `fsm:crc32`), and the call's arguments: `--arg`'s for a file's function, `init`'s at `--size` for a kernel."""
    return read_target(args.target, args.arg, args.size, args.seed)


def read_target(
    label: str, arg_specs: Sequence[str] = (), size: str | None = None, seed: int = 0
) -> tuple[Path, str, Node, Callable[..., object], list[object]]:
    """`target_inputs` for a target given by its text and its inputs' specs (`data=bytes[64]`), as the MCP server and
    the bench leg give them."""
    if target_file(label) is None:
        path, name, original, arguments = _bundled_inputs(label, size)
        return path, name, _function_node(path, name), original, arguments
    path_text, name = label.rsplit(":", 1)
    path = Path(path_text)
    function = _function_node(path, name)
    specs = {spec.name: spec for spec in (parse_arg_spec(item) for item in arg_specs)}
    arguments = _inputs(function, specs, seed)
    return path, name, function, ModuleFunction(path, name).imported(), arguments


def _function_node(path: Path, name: str) -> Node:
    tree = parse_source(read_source(path), str(path))
    for node in functions(tree):
        if text(node.child_by_field_name("name")) == name:
            return node
    raise SourceError(str(path), f"no top-level function named `{name}`")


def _bundled_inputs(label: str, size: str | None) -> tuple[Path, str, Callable[..., object], list[object]]:
    """A bundled kernel's file, function, Python original and its `init`'s inputs at `size` (SMALL by default), in
    the parameters' order; the parameters `init` leaves out keep their defaults."""
    bundled = find_bundled(label)
    wanted = (size or "SMALL").upper()
    if wanted not in SIZE_CLASSES:
        raise ArgumentSpecError(f"unknown size `{size}`; sizes are {', '.join(SIZE_CLASSES)}")
    values = bundled.module.init(**bundled.sizes[wanted])
    arguments = _positional(_function_node(bundled.path, bundled.function), values)
    return bundled.path, bundled.function, bundled.python_function(), arguments


def _positional(function: Node, values: dict[str, object]) -> list[object]:
    """`values` in the parameters' order. The trailing parameters with defaults that `values` leaves out are left
    out of the call; one left out before a given one takes its default."""
    names, defaults = parameter_names(function), parameter_defaults(function)
    missing = [name for name in names if name not in values and name not in defaults]
    if missing:
        types = assumed_types(function)
        kinds = {name: kind.kind if isinstance(kind, ir.Sequence) else None for name, kind in types.items()}
        examples = [f"{name}={kinds[name]}[64]" if kinds[name] else f"{name}=8" for name in missing]
        raise InputError(lambda fields: f"needs inputs for: {', '.join(missing)}; {fields.give(examples)}")
    while names and names[-1] not in values:
        names = names[:-1]
    return [values[name] if name in values else defaults[name] for name in names]


def _inputs(function: Node, specs: dict[str, ArgSpec], seed: int) -> list[object]:
    """The arguments `--arg` gives, in the parameters' order: numbers as given, arrays and byte strings random."""
    rng = np.random.default_rng(seed)
    values: dict[str, object] = {}
    for name in parameter_names(function):
        spec = specs.get(name)
        if spec is None:
            continue
        if spec.dtype is None:
            values[name] = spec.number
        else:
            values[name] = random_value(spec.dtype, tuple(dimension(d, specs, spec) for d in spec.dims), rng)
    return _positional(function, values)


def benches(script: str, function: str, graph: str | None) -> bool:
    """Whether `repoos bench` runs `function` of `script` on this track's leg: the graph store holds its FsmKernel,
    or ingest sends it to this track (the loop model refused it and this track claims it)."""
    from repoos_agent.ingest import ingest_file  # ingest asks the registry that imports this module

    if _has_fsm_kernel(script, function, graph):
        return True
    reports = ingest_file(script, bundled_ranks(script), only=function)  # a bundled NumPy kernel: with its ranks, as ever
    return any(report.name == function and report.track == "fsm" for report in reports)


def _has_fsm_kernel(script: str, function: str, graph: str | None) -> bool:
    if missing_store(graph, script):
        return False
    try:
        store = open_store(graph, script)
    except RepoosError:
        return False  # an unreadable store holds nothing to serve; the swapped leg says why when it needs one
    try:
        return store.get(FsmKernel, function_key(script, function)) is not None
    finally:
        store.close()


def optimize(args: argparse.Namespace) -> int:
    """`repoos optimize FILE.py:f --arg data=bytes[100000]` or `fsm:crc32 --size MEDIUM`: the arena's race, stored."""
    from repoos_agent.fsm.optimize import optimize_command  # the arena loads only for a race

    return optimize_command(args, target_inputs(args))


def swap(function: Callable[..., object], record: FsmKernel) -> Callable[..., object]:
    """`function` on its stored winner, rebuilt from its source and the record's steps (the runtime loads then)."""
    from repoos_agent.fsm.swap import swap as swap_winner

    return swap_winner(function, record)


def baseline(function: Callable[..., object], values: Mapping[str, object]) -> Callable[..., object]:
    """`@accelerate` without a stored FsmKernel: `function` built for its first call's types (the runtime loads then)."""
    from repoos_agent.fsm.swap import baseline as build_baseline

    return build_baseline(function, values)


TRACK = Track(
    name="fsm",
    claim_refused=claim,
    show=show,
    check=check,
    contract=FsmKernel,
    swap=swap,
    baseline=baseline,
    optimize=optimize,
    evaluate=evaluate,
    benches=benches,
    bench_leg="repoos_agent.fsm.bench_leg",
    bench_output="json",
    mcp="repoos_agent.mcp.fsm_tools",
    monitor="tui.fsm_command",
)
