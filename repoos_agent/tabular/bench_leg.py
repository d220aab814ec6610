"""One leg of `repoos bench` for an ORM endpoint, in its own process: N calls on one session, figures on stdout.

Run as `python -m repoos_agent.tabular.bench_leg` with the request as JSON on stdin. The
Python leg calls the endpoint as written; the swapped leg calls `swap_endpoint` of it, and
its route says whether the calls ran the fast path, fell back to the ORM, or had no contract.
The session is the endpoint's own dependency's (or one on `--db`), and the ORM's identity map
is emptied before every call, so each call builds its objects as a fresh request would. The
first call is untimed (it opens the connection and warms SQLAlchemy's statement cache, as a
running server's first request would); its response, serialized as the client would receive
it, is what the parent compares.
"""

from __future__ import annotations

import json
import sys
import warnings
from collections.abc import Callable
from pathlib import Path

from repoos_agent.runtime.bench import BenchRequest, LegResult
from repoos_agent.runtime.bench_leg import leg_main, leg_result, time_calls
from repoos_agent.store import missing_store, store_location
from repoos_agent.tabular.chain import read_chain
from repoos_agent.tabular.endpoint_session import endpoint_session
from repoos_agent.tabular.endpoint_values import parse_endpoint_values
from repoos_agent.tabular.optimize import endpoint_arguments, load_endpoint
from repoos_agent.tabular.response import response_of
from repoos_agent.tabular.swap import swap_endpoint
from repoos_agent.tabular.verify import GuardedEndpoint, TabularFallbackWarning

ORM_ROUTE = "ORM (the endpoint as written)"


def run_endpoint_leg(request: BenchRequest, leg: str, output: str) -> LegResult:
    chain = read_chain(request.script, request.function)
    function = load_endpoint(request.script, request.function)
    values = endpoint_arguments(function, chain, parse_endpoint_values(request.args))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", TabularFallbackWarning)
        endpoint = swap_endpoint(function, request.graph) if leg == "swapped" else function
        with endpoint_session(function, chain.session, request.db) as session:
            arguments = {chain.session: session, **values}
            response = response_of(function, endpoint(**arguments))

            def prepared(_: int) -> Callable[[], object]:
                session.expunge_all()
                return lambda: endpoint(**arguments)

            session.expunge_all()
            elapsed, cpu = time_calls(prepared, request.calls)
    Path(output).write_text(json.dumps(response))
    route = _route(request, leg, endpoint, [str(warning.message) for warning in caught], request.calls + 1)
    return leg_result(leg, route, elapsed, cpu, request.calls)


def _route(request: BenchRequest, leg: str, endpoint: Callable, fallbacks: list[str], calls: int) -> str:
    """What the leg's calls ran: the ORM as written, the fast path, or the ORM and why (no contract, a guard)."""
    if leg == "python":
        return ORM_ROUTE
    if not isinstance(endpoint, GuardedEndpoint):
        why = fallbacks[0] if fallbacks else _no_contract(request)
        return f"ORM — not swapped: {why}"
    verified = f"TabularKernel fast path (verified on {endpoint.contract.rows_compared} rows)"
    if endpoint.fast_calls == calls:
        return verified
    return f"{verified} on {endpoint.fast_calls} of {calls} calls; the ORM on the rest: {fallbacks[0]}"


def _no_contract(request: BenchRequest) -> str:
    missing = missing_store(request.graph, request.script)
    if missing:
        return missing
    store = store_location(request.graph, request.script)
    return f"the graph store {store} has no TabularKernel for it (`repoos optimize {request.script}:{request.function} --db URL`)"


if __name__ == "__main__":
    sys.exit(leg_main(run_endpoint_leg))
