"""The fsm track on fourteen branchy functions written as others write them: how many go in, and how fast.

The functions are `tests/fixtures/fsm_others.py` (type checks at entry, module dicts and alphabets, `str.find`,
helpers, state on `self`), kept apart from the kernels the track was built on. Each one the track takes is built
as `repoos check` builds it (the baseline, no rewrite), checked against the CPython original on this input first
(the same value, arguments and exception), then timed against it interleaved, one timed call at a time under the
measurement lock (`fsm.comparison.race`). Inputs are random, about a megabyte where the function reads a sequence,
so that CPython takes a sizeable fraction of a second; `encode_varint` takes one int and is timed on one call.
The refused ones are listed with their line and reason.

Prints the table and writes it to benchmarks/results/fsm-others.md.
Run: `.venv/bin/python benchmarks/fsm_others.py [--repeats 5]`.
"""

from __future__ import annotations

import argparse
import base64
import importlib.util
import math
import random
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

from tree_sitter import Node

sys.path.insert(0, str(Path(__file__).parent))

from report import write_results

from repoos_agent.fsm.compare import difference, outcome
from repoos_agent.fsm.comparison import race
from repoos_agent.fsm.lower import FsmRefusal, parameter_names
from repoos_agent.fsm.method import FsmMethod
from repoos_agent.fsm.native import FsmNative, lower_for
from repoos_agent.fsm.peers import InProcess
from repoos_agent.ingest.classify import walk
from repoos_agent.ingest.parse import parse_source, read_source, text

FIXTURE = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "fsm_others.py"
SIZE = 1_000_000


def inputs(rng: random.Random) -> dict[str, tuple[object, ...]]:
    """Each function's arguments: valid input of about `SIZE` elements, drawn from what the function reads."""
    payload = rng.randbytes(SIZE * 3 // 4)
    letters = "".join(rng.choices("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ ,.!é", k=SIZE))
    cobs = bytearray()
    while len(cobs) < SIZE:
        block = bytes(rng.randrange(1, 256) for _ in range(rng.randrange(0, 254)))
        cobs += bytes([len(block) + 1]) + block
    return {
        "b64decode": (base64.b64encode(payload).decode(),),
        "hex_decode": (payload[: SIZE // 2].hex(),),
        "percent_decode": ("".join(rng.choice(["a", "b", "+", "%41", "%e9", "z"]) for _ in range(SIZE // 3)) + "a",),
        "encode_varint": (rng.getrandbits(60),),
        "fletcher16": (rng.randbytes(SIZE),),
        "fnv1a_32": (rng.randbytes(SIZE),),
        "count_tokens": (" ".join(rng.choice(["12", "+", "(3*4)", "-", "7/8"]) for _ in range(SIZE // 3)),),
        "cobs_decode": (bytes(cobs),),
        "rot13": (letters,),
        "rle_encode": (bytes(rng.choice(b"aab") for _ in range(SIZE)),),
        "count_lines": (bytes(rng.choice(b"ab\r\n") for _ in range(SIZE)),),
        "roman_to_int": ("".join(rng.choices("MDCLXVI", k=SIZE)),),
        "ini_counts": ("".join(rng.choice(["[s]\n", "k=v\n", "; c\n", "\n"]) for _ in range(SIZE // 4)),),
        "read_bits": (3,),
    }


def _pair(name: str, node: Node, module: ModuleType, arguments: tuple[object, ...]) -> tuple[Callable[..., object], object]:
    """The original as a caller calls it, and what `repoos check` builds of it (raising `FsmRefusal` where it refuses):
    a function's baseline, or, for the one method, its baseline over an instance's state (`FsmMethod`)."""
    if name == "read_bits":
        reader = module.BitReader(bytes(SIZE // 8))
        return reader.read_bits, FsmMethod(node, module.BitReader.read_bits, reader, {"n": arguments[0]})
    original = getattr(module, name)
    return original, FsmNative(lower_for(node, dict(zip(parameter_names(node), arguments, strict=False))), original)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    spec = importlib.util.spec_from_file_location("fsm_others", FIXTURE)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    tree = parse_source(read_source(FIXTURE), str(FIXTURE))
    nodes = {text(n.child_by_field_name("name")): n for n in walk(tree.root_node) if n.type == "function_definition"}
    lines = ["| function | CPython s | ours s | ours x | note |", "|---|---|---|---|---|"]
    speedups, taken, refused, wrong = [], [], [], []
    for name, arguments in inputs(random.Random(1445)).items():
        try:
            original, native = _pair(name, nodes[name], module, arguments)
        except FsmRefusal as refusal:
            refused.append(name)
            lines.append(f"| {name} | | | | refused: line {refusal.line}: {refusal.reason} |")
            continue
        problem = difference(outcome(original, arguments), outcome(native, arguments))
        if problem is not None:
            wrong.append(name)
            lines.append(f"| {name} | | | | WRONG: {problem} |")
            continue
        taken.append(name)
        timings, machine = race(
            {"cpython": InProcess(original, arguments), "ours": InProcess(native, arguments)}, repeats=args.repeats
        )
        python, ours = timings["cpython"], timings["ours"]
        speedups.append(python.median_s / ours.median_s)
        note = machine or ("one int: a call's cost" if name == "encode_varint" else "")
        lines.append(
            f"| {name} | {python.median_s:.3g} ±{python.spread:.0%} | {ours.median_s:.3g} ±{ours.spread:.0%} "
            f"| {speedups[-1]:.1f}x | {note} |"
        )
        print(lines[-1], flush=True)
    geomean = math.exp(sum(map(math.log, speedups)) / len(speedups)) if speedups else float("nan")
    summary = (
        f"{len(taken)} of {len(taken) + len(refused) + len(wrong)} taken and equal to CPython on these inputs "
        f"({len(wrong)} wrong); geomean over CPython "
        f"{geomean:.1f}x. Each ours is the baseline `repoos check` builds (no rewrite raced); medians of {args.repeats} "
        "interleaved calls after 2 warm-ups, ± the relative interquartile spread."
    )
    print("\n".join(lines) + "\n\n" + summary)
    write_results("fsm-others.md", "fsm: fourteen branchy functions written as others write them", lines, summary)


if __name__ == "__main__":
    main()
