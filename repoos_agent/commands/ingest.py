"""`repoos ingest`: every function of a file as the model sees it, recorded in the graph store."""

from __future__ import annotations

import argparse
from dataclasses import asdict

from repoos_agent.agent.operations import describe_ingest
from repoos_agent.commands import print_json
from repoos_agent.findings import record_findings
from repoos_agent.inputs import parse_arg_spec
from repoos_agent.store.recording import record_ingest
from repoos_agent.target import ingest_path


def command_ingest(args: argparse.Namespace) -> int:
    reports = ingest_path(args.path, [parse_arg_spec(text) for text in args.arg])
    record_findings(args, record_ingest, args.path, reports, near=args.path)
    functions = describe_ingest(args.path, reports).functions
    if args.json:
        print_json([asdict(function) for function in functions])
        return 0
    for function in functions:
        status = "analyzable" if function.analyzable else "not analyzable"
        print(f"{args.path}:{function.line}: {function.name}: {function.track}, {status}: {function.reason}")
        for label in function.statement_labels:
            print(f"    {label.label}  line {label.line}  [{', '.join(label.loops)}]  {label.text}")
        for diagnostic in function.diagnostics:
            print(f"    {args.path}:{diagnostic.line}:{diagnostic.column}: {diagnostic.message}")
    if not functions:
        print(f"{args.path}: no top-level functions")
    return 0
