"""MCP latency benchmark: time per tool call, round trip through the SDK's client over stdio.

Starts `python -m repoos_agent mcp` as Claude Code or Codex would, then times
`list_kernels`, `check_legality` (gemm: a legal and an illegal schedule) and
`evaluate` (gemm at MEDIUM). The first call of each is reported apart (cold: the
kernel's model and dependences, a build into an empty cache); the rest as median,
min and max. Writes benchmarks/results/mcp.md. Target: check_legality under 100 ms.
Run: `.venv/bin/python benchmarks/mcp_latency.py`.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from report import chosen_kernels, write_results

ROOT = Path(__file__).resolve().parent.parent

CALLS = [
    ("list_kernels", {}),
    ("check_legality", {"target": "gemm", "schedule": "interchange(j, k); parallelize(i)"}),
    ("check_legality", {"target": "gemm", "schedule": "parallelize(k)"}),
    ("evaluate", {"target": "gemm", "schedule": "interchange(j, k); parallelize(i)", "size": "MEDIUM"}),
]


async def time_calls(repeats: dict[str, int]) -> list[tuple[str, str, float, list[float]]]:
    """(tool, schedule, first call ms, later calls ms) for each call in CALLS."""
    parameters = StdioServerParameters(
        command=sys.executable, args=["-m", "repoos_agent", "mcp"], env=dict(os.environ), cwd=str(ROOT)
    )
    rows = []
    async with stdio_client(parameters) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        for name, arguments in CALLS:
            times = []
            for _ in range(repeats[name]):
                start = time.perf_counter()
                result = await session.call_tool(name, arguments)
                times.append((time.perf_counter() - start) * 1000)
                if result.is_error:
                    raise SystemExit(f"{name} failed: {result.content[0].text}")
            rows.append((name, str(arguments.get("schedule", "")), times[0], times[1:]))
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=20, help="calls of list_kernels and check_legality")
    parser.add_argument("--evaluations", type=int, default=4, help="calls of evaluate (each builds and times)")
    args = parser.parse_args()
    chosen_kernels("gemm")  # a fresh build cache: the first evaluate really builds
    repeats = {"list_kernels": args.repeats, "check_legality": args.repeats, "evaluate": args.evaluations}
    rows = anyio.run(time_calls, repeats)
    header = "| tool | schedule | first call ms | median ms | min ms | max ms | calls |"
    lines = [header, "|---" * 7 + "|"]
    for name, schedule, first, later in rows:
        lines.append(
            f"| {name} | `{schedule}` | {first:.1f} | {statistics.median(later):.1f} | {min(later):.1f} | {max(later):.1f} "
            f"| {len(later) + 1} |"
        )
    print("\n".join(lines))
    checks = [statistics.median(later) for name, _, _, later in rows if name == "check_legality"]
    summary = (
        "Round trips through the SDK's client over stdio (JSON-RPC, argument validation, structured output). "
        f"check_legality median {max(checks):.1f} ms after the first call (target: under 100 ms). "
        "evaluate at MEDIUM proves, Z3-verifies, builds (cached after the first call) and times both builds "
        "interleaved, so its time is mostly the timed runs."
    )
    write_results("mcp.md", "MCP tool latency (gemm)", lines, summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
