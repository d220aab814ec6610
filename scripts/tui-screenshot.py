"""Regenerate docs/tui.png, the picture of `repoos tui` on docs/tui.md: a real heuristic search, drawn at 80x24.

Needs the `docs` extra (cairosvg, on the system's libcairo2):
    .venv/bin/pip install -e '.[docs]' && .venv/bin/python scripts/tui-screenshot.py
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
from pathlib import Path

import cairosvg

from repoos_agent.agent.search import SearchConfig
from repoos_agent.target import resolve_target
from tui.app import LiveSearch, SearchMonitor
from tui.target_actions import TargetActions

ROOT = Path(__file__).resolve().parent.parent


async def screenshot(kernel: str, config: SearchConfig, svg: Path) -> None:
    target = resolve_target(kernel)
    actions = TargetActions(target, config)
    app = SearchMonitor(LiveSearch(target, config), actions.code, actions.build_best)
    async with app.run_test(size=(80, 24)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        await pilot.press("down")  # the runner-up's feedback in the detail pane
        await pilot.pause()
        app.save_screenshot(svg.name, str(svg.parent))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kernel", default="2mm")
    parser.add_argument("--size", default="SMALL")
    parser.add_argument("--iters", type=int, default=3)
    parser.add_argument("--output", default=str(ROOT / "docs" / "tui.png"))
    args = parser.parse_args()
    config = SearchConfig(iters=args.iters, candidates=4, size=args.size)
    with tempfile.TemporaryDirectory() as scratch:
        svg = Path(scratch) / "tui.svg"
        asyncio.run(screenshot(args.kernel, config, svg))
        cairosvg.svg2png(url=str(svg), write_to=args.output, output_width=1280)
    print(args.output)


if __name__ == "__main__":
    main()
