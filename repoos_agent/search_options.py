"""What the search's command-line options mean once parsed, for every command that runs a search (`optimize`, `tui`,
a track's own).

The options themselves are declared in `arguments`, which loads no engine: the parser is built for every
command, these only for a command that searches.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from contextlib import contextmanager

from repoos_agent.agent.events import EventStream, JsonlLog
from repoos_agent.agent.search import SearchConfig
from repoos_agent.agent.search_report import backend_spec
from repoos_agent.errors import RepoosError
from repoos_agent.inputs import parse_arg_spec
from repoos_agent.target import Target, resolve_target


def search_target(args: argparse.Namespace) -> Target:
    """The kernel the options name, with its `--arg` specs."""
    return resolve_target(args.target, [parse_arg_spec(text) for text in args.arg])


def search_config(args: argparse.Namespace) -> SearchConfig:
    """The `SearchConfig` the options describe."""
    return SearchConfig(
        backend=backend_spec(args.backend, args.model),
        base_url=args.base_url,
        moa=tuple(spec.strip() for spec in args.moa.split(",") if spec.strip()) if args.moa else (),
        aggregator=args.aggregator,
        mode=args.mode,
        iters=args.iters,
        k=args.k,
        candidates=args.candidates,
        size=args.size,
        compiler=args.compiler,
        seed=args.seed,
        allow_reassociation=args.allow_reassociation,
        timeout_s=args.timeout,
        budget_s=args.budget,
        cluster=args.cluster,
        constrain=args.constrain,
        prompt=args.prompt,
    )


@contextmanager
def search_events(args: argparse.Namespace) -> Iterator[EventStream]:
    """The search's event stream; with `--log`, every event is appended to that file until the block ends."""
    events = EventStream()
    if not args.log:
        yield events
        return
    try:
        log = JsonlLog(args.log)
    except OSError as error:
        raise RepoosError(f"--log {args.log}: {error.strerror}") from None
    events.subscribe(log)
    try:
        yield events
    finally:
        log.close()
