"""`repoos`: the command line. Each command is a thin layer over one engine function."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict

from repoos_agent.catalog import SIZE_CLASSES, bundled_kernels
from repoos_agent.check import check_baseline
from repoos_agent.errors import RepoosError
from repoos_agent.ingest import ingest_file
from repoos_agent.inputs import parse_arg_spec
from repoos_agent.target import resolve_target


def _print_json(payload: object) -> None:
    print(json.dumps(payload, indent=2))


def command_kernels(args: argparse.Namespace) -> int:
    kernels = bundled_kernels()
    if args.json:
        _print_json([{"name": k.name, "category": k.category, "function": k.function, "sizes": k.sizes} for k in kernels])
        return 0
    width = max(len(k.name) for k in kernels)
    for kernel in kernels:
        sizes = "  ".join(f"{s} {'x'.join(str(v) for v in kernel.sizes[s].values())}" for s in ("MINI", "LARGE"))
        print(f"{kernel.name:<{width}}  {kernel.category:<24}  {sizes}")
    print(f"{len(kernels)} kernels; sizes {', '.join(SIZE_CLASSES)}")
    return 0


def command_ingest(args: argparse.Namespace) -> int:
    reports = ingest_file(args.path)
    rows = []
    for report in reports:
        kernel = report.kernel
        rows.append(
            {
                "name": report.name,
                "line": report.line,
                "track": report.track,
                "reason": report.reason,
                "analyzable": report.analyzable,
                "statements": len(kernel.statements) if kernel else 0,
                "loops": list(report.loops),
                "parameters": list(kernel.parameters) if kernel else [],
                "statement_labels": [
                    {"label": s.name, "line": s.line, "text": s.text, "loops": list(s.iterators)}
                    for s in (kernel.statements if kernel else ())
                ],
                "diagnostics": [asdict(d) for d in report.diagnostics],
            }
        )
    if args.json:
        _print_json(rows)
        return 0
    for row in rows:
        status = "analyzable" if row["analyzable"] else "not analyzable"
        print(f"{args.path}:{row['line']}: {row['name']}: {row['track']}, {status}: {row['reason']}")
        for label in row["statement_labels"]:
            print(f"    {label['label']}  line {label['line']}  [{', '.join(label['loops'])}]  {label['text']}")
        for diagnostic in row["diagnostics"]:
            print(f"    {args.path}:{diagnostic['line']}:{diagnostic['column']}: {diagnostic['message']}")
    if not rows:
        print(f"{args.path}: no top-level functions")
    return 0


def command_check(args: argparse.Namespace) -> int:
    specs = [parse_arg_spec(text) for text in args.arg]
    target = resolve_target(args.target, specs)
    report = check_baseline(target, args.size, args.seed)
    if args.json:
        payload = asdict(report)
        payload["speedup"] = report.speedup
        _print_json(payload)
        return 0 if report.correct else 1
    where = f" at {report.size}" if report.size else ""
    verdict = "correct" if report.correct else f"INCORRECT ({', '.join(report.mismatched)} differ)"
    print(f"{report.target}{where}: {verdict}, max relative error {report.max_rel_error:.1e} (tolerance {report.tolerance:g})")
    compared = f" at {report.compare_size}" if report.compare_size != report.size else ""
    print(f"  python  {report.python_s:10.6f} s{compared}")
    print(f"  native  {report.native_s:10.6f} s  ±{report.native_spread:.0%}{where}  ({report.instances:,} statement instances)")
    if report.compare_size != report.size:
        print(f"  native  {report.native_compare_s:10.6f} s{compared}")
    print(f"  speedup {report.speedup:10.1f}x over the Python original{compared}")
    if report.note:
        print(f"  note: {report.note}")
    return 0 if report.correct else 1


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="repoos", description="RepoOS Agent: a polyhedral optimizer for Python loop kernels.")
    commands = parser.add_subparsers(dest="command", required=True)

    kernels = commands.add_parser("kernels", help="list the bundled kernels")
    kernels.add_argument("--json", action="store_true")
    kernels.set_defaults(run=command_kernels)

    ingest = commands.add_parser("ingest", help="model every function of a Python file")
    ingest.add_argument("path")
    ingest.add_argument("--json", action="store_true")
    ingest.set_defaults(run=command_ingest)

    check = commands.add_parser("check", help="build the native baseline and compare it with the Python original")
    check.add_argument("target", help="a bundled kernel (gemm) or path/to/file.py:function")
    check.add_argument("--size", help=f"size class of a bundled kernel: {', '.join(SIZE_CLASSES)} (default SMALL)")
    check.add_argument(
        "--arg",
        action="append",
        default=[],
        metavar="NAME=SPEC",
        help="input of a user kernel: n=512, alpha=1.5, a=f64[512,512]",
    )
    check.add_argument("--seed", type=int, default=0, help="seed of random inputs")
    check.add_argument("--json", action="store_true")
    check.set_defaults(run=command_check)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.run(args)
    except RepoosError as exc:
        print(f"repoos: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("repoos: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
