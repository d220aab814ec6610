"""The revenue app under uvicorn, for the HTTP leg of benchmarks/tabular.py: as written, or with its fast paths.

With `--graph`, the contracts `repoos optimize` stored there are installed on the app's routes
(`repoos_agent.tabular.swap.install`) before it serves, and a fallback to the ORM is made an
error: a request the fast path did not serve fails instead of being timed as ours. The first
line on stdout names the routes installed. The database is the app's own, `REVENUE_DB_URL`.

Run: `python benchmarks/serve_revenue.py --port 8000 [--graph .repoos/graph.sqlite]`.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent.parent))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--graph", help="install the fast paths stored in this graph store")
    args = parser.parse_args()

    import uvicorn

    from kernels.apps.revenue_app.main import app
    from repoos_agent.tabular.swap import install
    from repoos_agent.tabular.verify import TabularFallbackWarning

    installed = install(app, args.graph) if args.graph else []
    if args.graph and not installed:
        raise SystemExit(f"no fast path stored in {args.graph}")
    warnings.simplefilter("error", TabularFallbackWarning)
    print("installed:", " ".join(installed), flush=True)
    uvicorn.run(app, host="127.0.0.1", port=args.port, workers=1, log_level="warning", access_log=False)


if __name__ == "__main__":
    main()
