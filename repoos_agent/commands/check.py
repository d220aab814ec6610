"""`repoos check`: the native baseline against the Python original, or a schedule against the baseline."""

from __future__ import annotations

import argparse
from dataclasses import asdict

from repoos_agent.check import built_baseline, check_baseline
from repoos_agent.commands import print_json
from repoos_agent.errors import NotAnalyzableError
from repoos_agent.findings import record_findings
from repoos_agent.inputs import parse_arg_spec
from repoos_agent.store.recording import record_baseline_check
from repoos_agent.target import Target, resolve_target
from repoos_agent.tracks import named_track


def command_check(args: argparse.Namespace) -> int:
    specs = [parse_arg_spec(text) for text in args.arg]
    try:
        target = resolve_target(args.target, specs)
    except NotAnalyzableError as refused:
        track = named_track(refused.track)
        if track is None or track.check is None or args.schedule is not None:
            raise
        return track.check(args)  # a function another track took from the loop model: that track checks it
    if args.schedule is not None:
        # Imported here: a schedule's proof loads Z3 and the verifier, which the baseline's check never needs.
        from repoos_agent.commands.check_schedule import check_schedule

        return check_schedule(args, target)
    if args.no_measure:
        return _built_only(args, target)
    report = check_baseline(target, args.size, args.seed, args.compiler)
    record_findings(args, record_baseline_check, target, report, args.compiler, near=target.kernel.path)
    if args.json:
        payload = asdict(report)
        payload["speedup"] = report.speedup
        print_json(payload)
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


def _built_only(args: argparse.Namespace, target: Target) -> int:
    """`check TARGET --no-measure`: the baseline built, and nothing run or timed (nor recorded: nothing was measured)."""
    size = target.size_class(args.size)
    native = built_baseline(target, target.inputs(size, args.seed), args.compiler)
    if args.json:
        print_json({"target": target.label, "size": size, "built": native.library.name, "measured": False})
    else:
        where = f" at {size}" if size else ""
        print(f"{target.label}{where}: built {native.library.name} (--no-measure: not run, not timed)")
    return 0
