"""`repoos tui` and `repoos-tui`: the monitor's command line, sharing `optimize`'s search options.

With `--db URL` the target is an ORM endpoint and the tabular monitor runs its tabular track; a
replay picks the monitor of the track its log recorded.
"""

from __future__ import annotations

import argparse
import sys

from repoos_agent.agent.search import SearchConfig
from repoos_agent.entry_point import run_command
from repoos_agent.errors import ArgumentSpecError, RepoosError
from repoos_agent.search_options import add_search_options, positive_float, search_config, search_events, search_target
from repoos_agent.tabular.run_events import is_tabular
from repoos_agent.target import resolve_target
from tui.replay import Replay, read_run_log
from tui.target_actions import TargetActions


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_search_options(parser, target_required=False)
    parser.add_argument("--replay", metavar="RUN.jsonl", help="replay a run log written by `repoos optimize --log` instead")
    parser.add_argument("--speed", type=positive_float, default=1.0, help="replay speed: 10 plays ten times faster (default 1)")
    parser.add_argument(
        "--db",
        metavar="URL",
        help="an ORM endpoint (app.py:function): watch its fast path verified on this database and raced, as `optimize --db`",
    )


def run(args: argparse.Namespace) -> int:
    """Start the monitor on a live search or a replay; prints the outcome when it closes."""
    from tui.app import LiveSearch, SearchMonitor  # Textual loads only when the monitor runs

    if (args.target is None) == (args.replay is None):
        raise ArgumentSpecError("give a TARGET to search, or --replay RUN.jsonl to watch a recorded run (not both)")
    if args.db and args.replay:
        raise ArgumentSpecError("--db runs an endpoint live; a replay needs no database")
    if args.db:
        return _run_endpoint(args)
    if args.replay:
        log = read_run_log(args.replay)
        if is_tabular(log.events[0]):
            from tui.tabular_app import TabularMonitor

            TabularMonitor(Replay(log, args.speed)).run()
            return 0
        actions = _replay_actions(log.events[0].detail, args.graph)
        app = SearchMonitor(
            Replay(log, args.speed),
            show_code=actions.code if actions else None,
            save_best=actions.save_best if actions else None,
        )
        app.run()
        return 0
    target, config = search_target(args), search_config(args)
    target.size_class(config.size)  # a bad --size is a one-line error here, not a failed run on screen
    with search_events(args) as events:
        actions = TargetActions(target, config, args.graph)
        app = SearchMonitor(LiveSearch(target, config, events), show_code=actions.code, save_best=actions.save_best)
        result = app.run()
    if app.failure is not None:
        raise RepoosError(app.failure)
    if result is not None:
        ending = "cancelled, best so far" if result.cancelled else "best"
        print(f"{ending}: {result.schedule or '(identity: the baseline)'}  {result.best_speedup:.2f}x ±{result.best_spread:.0%}")
        print(f"  {result.evaluations} evaluations in {result.wall_s:.1f} s")
        return 0
    return app.return_code or 0  # Textual sets 1 when the app died of an unexpected error (its traceback is printed)


def _run_endpoint(args: argparse.Namespace) -> int:
    """The tabular monitor on a live run; prints what `optimize --db` prints, and fails or warns as it does."""
    from repoos_agent.tabular.endpoint_values import parse_endpoint_values
    from repoos_agent.tabular.optimize import split_endpoint
    from tui.tabular_app import TabularMonitor
    from tui.tabular_run import LiveEndpoint

    path, function = split_endpoint(args.target)
    values = parse_endpoint_values(args.arg)
    with search_events(args) as events:
        app = TabularMonitor(LiveEndpoint(path, function, args.db, values, args.graph, events))
        result = app.run()
    if app.failure is not None:
        raise RepoosError(app.failure)
    if app.unrecorded is not None:
        print(f"repoos: warning: not recorded in the graph store: {app.unrecorded}", file=sys.stderr)
        args.unrecorded = True
    if result is not None:
        print(f"{args.target} on {result.database}: verified, {result.contract.rows_compared} rows equal to the ORM's")
        print(f"  orm {result.orm_s * 1000:.2f} ms, fast path {result.fast_s * 1000:.2f} ms: {result.speedup:.2f}x")
        return 0
    return app.return_code or 0  # Textual sets 1 when the app died of an unexpected error


def _replay_actions(started: dict[str, object], graph: str | None) -> TargetActions | None:
    """Code and saving for a replay, when the logged kernel still loads here (a bundled kernel or a file that exists)."""
    config = started.get("config")
    if not isinstance(config, dict):
        return None
    known = {name: value for name, value in config.items() if name in SearchConfig.__dataclass_fields__}
    known["moa"] = tuple(known.get("moa") or ())
    try:
        return TargetActions(resolve_target(str(started.get("target", ""))), SearchConfig(**known), graph)
    except (RepoosError, TypeError):
        return None


def main(argv: list[str] | None = None) -> int:
    """The `repoos-tui` entry point: `repoos tui` under its own name."""
    parser = argparse.ArgumentParser(prog="repoos-tui", description="Watch an agent search live, or replay a recorded one.")
    add_arguments(parser)
    parser.set_defaults(run=run)
    return run_command(parser.parse_args(argv), prog=parser.prog)


if __name__ == "__main__":
    sys.exit(main())
