"""`repoos tui` and `repoos-tui`: the monitor's command line, sharing `optimize`'s search options.

The grammar only, with each registered track's option: what runs is `tui/launch.py`, imported when the
command runs, so that `repoos --help` (which builds this grammar too) loads neither the search nor Textual.
"""

from __future__ import annotations

import argparse
import sys

from repoos_agent.arguments import add_search_options, positive_float
from repoos_agent.entry_point import LazyHandler, run_command
from repoos_agent.tracks import track_options

run = LazyHandler("tui.launch:run")
"""Start the monitor on a live search or a replay; prints the outcome when it closes (`tui/launch.py`)."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The search's options, a replay's, and the option of each track whose monitor watches its runs."""
    add_search_options(parser, target_required=False)
    parser.add_argument("--replay", metavar="RUN.jsonl", help="replay a run log written by `repoos optimize --log` instead")
    parser.add_argument("--speed", type=positive_float, default=1.0, help="replay speed: 10 plays ten times faster (default 1)")
    for option in track_options():
        if option.tui_help is not None:
            parser.add_argument(option.flag, metavar=option.metavar, help=option.tui_help)


def main(argv: list[str] | None = None) -> int:
    """The `repoos-tui` entry point: `repoos tui` under its own name."""
    parser = argparse.ArgumentParser(prog="repoos-tui", description="Watch an agent search live, or replay a recorded one.")
    add_arguments(parser)
    parser.set_defaults(run=run)
    return run_command(parser.parse_args(argv), prog=parser.prog)


if __name__ == "__main__":
    sys.exit(main())
