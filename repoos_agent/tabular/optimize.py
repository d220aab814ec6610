"""`repoos optimize app/main.py:endpoint --db URL`: compile, verify, race and store an endpoint's fast path.

The endpoint's module is imported from its file (as `repoos run` would run it), the query chain
is read from its source, and a session on `--db` plays the endpoint's session parameter. The
values it is verified and raced with are the endpoint's own defaults, overridden by `--arg`.
The ORM path and the fast path are timed alternately on the same session; the contract is
stored without the URL: credentials never leave the command line. Each step is an event on the
run's `EventStream` (`run_events` decides what they may carry), for `--log` and `repoos tui`.
"""

from __future__ import annotations

import importlib.util
import inspect
import sys
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy import create_engine
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session

from repoos_agent.agent.events import EventStream
from repoos_agent.errors import RepoosError
from repoos_agent.measure.timing import Timing
from repoos_agent.store import Batch, GraphStore, TabularKernel, function_key
from repoos_agent.tabular.chain import QueryChain, read_chain
from repoos_agent.tabular.compiled import compile_query
from repoos_agent.tabular.credentials import safe_url, without_password
from repoos_agent.tabular.fast_path import FastQuery
from repoos_agent.tabular.result import TabularResult
from repoos_agent.tabular.run_events import TabularEvents
from repoos_agent.tabular.verify import Mismatch, verify_endpoint

REPEATS = 9


def optimize_endpoint(
    path: str, function_name: str, url: str, overrides: Mapping[str, object], events: EventStream | None = None
) -> TabularResult:
    """Compile `function_name` of `path`, verify it on the database at `url`, race it against the ORM.

    Every step is emitted on `events`; a failure ends the run with a `run_finished` that says why
    (subscribers such as the TUI must see it end), then raises."""
    run = TabularEvents(events or EventStream())
    run.started(f"{path}:{function_name}", safe_url(url), REPEATS)
    try:
        result = _optimize(path, function_name, url, overrides, run)
    except BaseException as error:
        run.failed(without_password(url, str(error).splitlines()[0] if str(error) else type(error).__name__))
        raise
    run.finished(result)
    return result


def _optimize(path: str, function_name: str, url: str, overrides: Mapping[str, object], run: TabularEvents) -> TabularResult:
    chain = read_chain(path, function_name)
    run.chain_read(chain)
    function = load_endpoint(path, function_name)
    values = endpoint_arguments(function, chain, overrides)
    try:
        engine = create_engine(url)
    except (SQLAlchemyError, ValueError, ImportError) as error:
        raise RepoosError(f"--db {safe_url(url)}: {type(error).__name__}: {without_password(url, str(error))}") from None
    try:
        with Session(engine) as session:
            # Compiled once more inside the verification, on its snapshot: this one is the SQL shown while it runs
            # (and beside a mismatch), and compiling touches no table.
            run.compiled(compile_query(chain, function, session))
            verdict = verify_endpoint(function, chain, session, values)
            if isinstance(verdict, Mismatch):
                run.mismatch(verdict.reason)
                raise RepoosError(f"{path}:{chain.line}: `{function_name}`: the fast path differs from the ORM: {verdict.reason}")
            run.verified(verdict)
            orm, fast = _race(function, chain, FastQuery(verdict.query), session, values, run)
    except SQLAlchemyError as error:
        raise RepoosError(
            f"--db {safe_url(url)}: {type(error).__name__}: {without_password(url, str(error).splitlines()[0])}"
        ) from None
    finally:
        engine.dispose()
    return TabularResult(verdict, orm.median_s, fast.median_s, safe_url(url), orm.spread, fast.spread, run.run)


def write_contract(store: GraphStore, result: TabularResult, path: str, events: EventStream | None = None) -> TabularKernel:
    """Store `result`'s contract as the `TabularKernel` of its endpoint; a `contract_stored` event on `events` says so."""
    record = record_of(result, path)
    store.write(Batch((record,), ()))
    if events is not None:
        TabularEvents(events, result.run).stored(record)
    return record


def record_of(result: TabularResult, path: str) -> TabularKernel:
    contract, query, chain = result.contract, result.contract.query, result.contract.chain
    return TabularKernel(
        key=function_key(path, chain.function), function=function_key(path, chain.function), source_digest=chain.source_digest,
        sql=query.sql, parameters=query.parameters, keys=query.keys, entity=query.entity or "", ordered=query.ordered,
        tables=query.tables, dialect=query.dialect, positional=query.positional, schema_digest=contract.schema_digest,
        rows_compared=contract.rows_compared, speedup=result.speedup,
        recorded_at=datetime.now(UTC).isoformat(timespec="seconds"),
    )  # fmt: skip


def _race(
    function: Callable, chain: QueryChain, fast: FastQuery, session: Session, values: dict, run: TabularEvents
) -> tuple[Timing, Timing]:
    """Both paths, alternately, after a warm-up each; each pair of samples an event. The ORM's identity map is
    emptied between calls."""
    orm_times, fast_times = [], []
    for turn in range(REPEATS + 1):
        start = time.perf_counter()
        function(**{chain.session: session}, **values)
        middle = time.perf_counter()
        session.expunge_all()
        fast(session, values)
        end = time.perf_counter()
        if turn:
            orm_times.append(middle - start)
            fast_times.append(end - middle)
            run.sample(turn, orm_times[-1], fast_times[-1])
    session.rollback()
    return Timing.of(orm_times), Timing.of(fast_times)


def load_endpoint(path: str, name: str) -> Callable:
    """The endpoint, imported from its file under the module name its package path gives (imports inside it
    resolve as they do when the app runs from the working directory)."""
    file = Path(path).resolve()
    root = Path.cwd().resolve()
    module_name = ".".join(file.relative_to(root).with_suffix("").parts) if file.is_relative_to(root) else file.stem
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    try:
        if module_name in sys.modules:
            module = sys.modules[module_name]
        else:
            spec = importlib.util.spec_from_file_location(module_name, file)
            module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
            sys.modules[module_name] = module
            spec.loader.exec_module(module)  # type: ignore[union-attr]
    except Exception as error:  # the app's own import failing: its message, one line
        raise RepoosError(f"{path}: importing it failed: {type(error).__name__}: {error}") from None
    function = getattr(module, name, None)
    if not callable(function):
        raise RepoosError(f"{path}: no function named `{name}`")
    return function


def split_endpoint(target: str) -> tuple[str, str]:
    """`path/to/app.py:function` as its path and function name."""
    path, _, function = target.rpartition(":")
    if not path or not function:
        raise RepoosError(f"`{target}`: give the endpoint as path/to/app.py:function with --db")
    return path, function


def endpoint_arguments(function: Callable, chain: QueryChain, overrides: Mapping[str, object]) -> dict:
    unknown = sorted(set(overrides) - set(chain.parameters))
    if unknown:
        raise RepoosError(f"--arg {', '.join(unknown)}: `{chain.function}` takes {', '.join(chain.parameters) or 'no values'}")
    values = {}
    for name, parameter in inspect.signature(function).parameters.items():
        if name == chain.session:
            continue
        if name in overrides:
            values[name] = overrides[name]
        elif parameter.default is not inspect.Parameter.empty:
            values[name] = parameter.default
        else:
            raise RepoosError(f"`{chain.function}` needs a value for `{name}`: give it as --arg {name}=VALUE")
    return values
