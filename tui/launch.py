"""What `repoos tui` and `repoos-tui` run once parsed: the monitor on a live search, a track's monitor, or a replay.

A track's option (`--db URL`: the target is an ORM endpoint) sends the target to the monitor the
track's registration names (`Track.monitor`), as does a target the loop model refuses and another
track takes (a branchy function, the fsm track's); a replay picks the monitor of the track its log
recorded, and the search monitor when no track names one. Apart from the grammar (`tui/command.py`),
which every `repoos` command builds.
"""

from __future__ import annotations

import argparse
import importlib

from repoos_agent.agent.search import SearchConfig
from repoos_agent.errors import ArgumentSpecError, NotAnalyzableError, RepoosError
from repoos_agent.search_options import search_config, search_events, search_target
from repoos_agent.target import resolve_target
from repoos_agent.tracks import chosen_registration, named_track
from tui.replay import Replay, read_run_log
from tui.target_actions import TargetActions


def run(args: argparse.Namespace) -> int:
    """Start the monitor on a live search or a replay; prints the outcome when it closes."""
    from tui.app import LiveSearch, SearchMonitor  # Textual loads only when the monitor runs

    if (args.target is None) == (args.replay is None):
        raise ArgumentSpecError("give a TARGET to search, or --replay RUN.jsonl to watch a recorded run (not both)")
    registration = chosen_registration(args)
    track = registration.track() if registration is not None else None
    if track is not None and track.monitor is not None:
        if args.replay:
            option = registration.option
            raise ArgumentSpecError(f"{option.flag} runs {option.runs} live; a replay needs no {option.value}")
        return importlib.import_module(track.monitor).watch(args)
    if args.replay:
        log = read_run_log(args.replay)
        recorded = named_track(log.events[0].detail.get("track"))
        if recorded is not None and recorded.monitor is not None:
            importlib.import_module(recorded.monitor).replay(log, args.speed)
            return 0
        actions = _replay_actions(log.events[0].detail, args.graph)
        app = SearchMonitor(
            Replay(log, args.speed),
            show_code=actions.code if actions else None,
            save_best=actions.save_best if actions else None,
        )
        app.run()
        return 0
    try:
        target = search_target(args)
    except NotAnalyzableError as refused:
        other = named_track(refused.track)
        if other is None or other.monitor is None:
            raise
        return importlib.import_module(other.monitor).watch(args)  # a function another track took (the fsm track's)
    config = search_config(args)
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
