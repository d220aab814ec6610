"""Regenerate docs/tui.png, the picture of `repoos tui` on docs/tui.md: a real heuristic search, drawn at 80x24.

The search is the one the eval-medium study ran on gemm (the offline heuristic backend,
MEDIUM, 10 turns of 4 candidates: about 12 evaluations, a few seconds of measuring), so the
picture shows figures the product really reaches. Run it on a quiet machine: the figures
are measured. Needs the `docs` extra (cairosvg, on the system's libcairo2):
    .venv/bin/pip install -e '.[docs]' && .venv/bin/python scripts/tui-screenshot.py
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

import cairosvg

from repoos_agent.agent.search import SearchConfig
from repoos_agent.target import resolve_target
from tui.app import LiveSearch, SearchMonitor
from tui.status import outcome
from tui.target_actions import TargetActions

ROOT = Path(__file__).resolve().parent.parent
SIZE = (80, 24)  # the smallest terminal the monitor promises to stay readable in
TIMEOUT_S = 300.0


async def screenshot(kernel: str, config: SearchConfig, svg: Path) -> SearchMonitor:
    """Run the search in the monitor and save the screen once its last event is drawn."""
    target = resolve_target(kernel)
    actions = TargetActions(target, config)
    app = SearchMonitor(LiveSearch(target, config), actions.code, actions.save_best)
    async with app.run_test(size=SIZE) as pilot:
        await app.workers.wait_for_complete()
        # The search's events reach the app as messages, in order: the run's finish is the last one drawn.
        deadline = time.monotonic() + TIMEOUT_S
        while app.board.finished is None and app.failure is None:
            if time.monotonic() > deadline:
                raise SystemExit(f"the monitor did not draw the end of the run within {TIMEOUT_S:.0f} s (state: {app.state})")
            await pilot.pause(0.05)
        await pilot.pause()
        app.save_screenshot(svg.name, str(svg.parent))
    return app


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kernel", default="gemm")
    parser.add_argument("--size", default="MEDIUM")
    parser.add_argument("--iters", type=int, default=10)
    parser.add_argument("--output", default=str(ROOT / "docs" / "tui.png"))
    args = parser.parse_args()
    config = SearchConfig(iters=args.iters, candidates=4, size=args.size)
    with tempfile.TemporaryDirectory() as scratch:
        svg = Path(scratch) / "tui.svg"
        app = asyncio.run(screenshot(args.kernel, config, svg))
        board, finished = app.board, app.board.finished
        if app.failure is not None or finished is None or finished.detail.get("failed"):
            sys.exit(f"the search failed, no picture written: {app.failure or 'see the event log'}")
        cairosvg.svg2png(url=str(svg), write_to=args.output, output_width=1280)
    print(f"{args.output}: {args.kernel} {args.size}, {board.evaluations} evaluations in {board.elapsed(False):.1f} s")
    print(f"  best {board.best_speedup:.2f}x; " + outcome(board, finished).replace("\n", "; "))


if __name__ == "__main__":
    main()
