"""`repoos cache`: what the on-disk kernel cache holds, or emptying it."""

from __future__ import annotations

import argparse
from dataclasses import asdict

from repoos_agent.backends.cache import cache_info, clear_cache
from repoos_agent.commands import print_json


def command_cache(args: argparse.Namespace) -> int:
    if args.action == "clear":
        removed = clear_cache()
        print(f"removed {removed} files from {cache_info().directory}")
        return 0
    info = cache_info()
    if args.json:
        print_json(asdict(info))
    else:
        print(f"{info.directory}: {info.builds} builds, {info.libraries} libraries, {info.bytes / 1e6:.1f} MB")
    return 0
