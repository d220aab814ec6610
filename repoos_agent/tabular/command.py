"""`repoos optimize app.py:function --db URL`: the tabular track's command, reached through its registration.

An ORM endpoint's fast path is verified against the database and raced against the ORM; the
contract is recorded where `repoos_agent.tabular.swap.install(app)` finds it, as a loop search's
result is (`record_findings`).
"""

from __future__ import annotations

import argparse
import json

from repoos_agent.findings import record_findings
from repoos_agent.search_options import search_events
from repoos_agent.tabular.endpoint_values import parse_endpoint_values
from repoos_agent.tabular.optimize import optimize_endpoint, split_endpoint, write_contract


def optimize_command(args: argparse.Namespace) -> int:
    """Verify and race the endpoint `args.target` on `args.db`; print the outcome (`--json`: as one object)."""
    path, function = split_endpoint(args.target)
    with search_events(args) as events:
        result = optimize_endpoint(path, function, args.db, parse_endpoint_values(args.arg), events)
        record_findings(args, write_contract, result, path, events, near=path)
    contract = result.contract
    payload = {
        "target": args.target,
        "database": result.database,
        "sql": contract.query.sql,
        "parameters": list(contract.query.parameters),
        "rows_compared": contract.rows_compared,
        "orm_s": result.orm_s,
        "fast_s": result.fast_s,
        "speedup": result.speedup,
    }
    if args.json:
        print(json.dumps(payload, indent=2))
        return 0
    print(f"{args.target} on {result.database}: verified, {contract.rows_compared} rows equal to the ORM's")
    print(f"  sql       {' '.join(contract.query.sql.split())}")
    print(f"  orm       {result.orm_s * 1000:.2f} ms")
    print(f"  fast path {result.fast_s * 1000:.2f} ms")
    print(f"  speedup   {result.speedup:.2f}x over the ORM on the same session")
    return 0
