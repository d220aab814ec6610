"""Serve the revenue app with uvicorn on 127.0.0.1.

`repoos run kernels/apps/revenue_app/serve.py --port 8765` serves it with every endpoint that has
a verified fast path swapped in; `python -m kernels.apps.revenue_app.serve --port 8765` serves it
as written. The database is the one `REVENUE_DB_URL` names."""

from __future__ import annotations

import argparse

import uvicorn

from kernels.apps.revenue_app.main import app


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8000)
    args = parser.parse_args(argv)
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
