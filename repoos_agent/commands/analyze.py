"""`repoos analyze`: a kernel's dependences, and which loops could run parallel or vectorized."""

from __future__ import annotations

import argparse
from dataclasses import asdict

from repoos_agent.commands import print_json
from repoos_agent.inputs import parse_arg_spec
from repoos_agent.legality import analyze
from repoos_agent.target import resolve_target


def command_analyze(args: argparse.Namespace) -> int:
    analysis = analyze(resolve_target(args.target, [parse_arg_spec(text) for text in args.arg]).kernel)
    if args.json:
        print_json(asdict(analysis))
        return 0
    print(f"{analysis.kernel}: parameters {', '.join(analysis.parameters) or 'none'}")
    for statement in analysis.statements:
        reduction = "  (reduction)" if statement.reduction else ""
        print(f"  {statement.label}  line {statement.line}  [{', '.join(statement.loops)}]  {statement.text}{reduction}")
    print("dependences:")
    for dependence in analysis.dependences:
        print(f"  {dependence}")
    print("loops:")
    for loop in analysis.loops:
        parallel = f"parallel with {', '.join(loop.private)} private" if loop.private else "parallel"
        split = f"vector, its lanes splitting the sum {', '.join(loop.lane_sums)}"
        marks = ((parallel, loop.parallelizable), ("vector", loop.vectorizable), (split, loop.lane_sums))
        can = [word for word, yes in marks if yes]
        print(f"  {'  ' * loop.depth}{loop.name}: {', '.join(can) or 'carries ' + str(len(loop.carries)) + ' dependences'}")
    return 0
