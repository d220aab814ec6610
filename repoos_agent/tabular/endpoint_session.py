"""The session an endpoint is called with outside a server: its own dependency, or one on `--db URL`.

`repoos bench` measures the endpoint as the app runs it, so by default the session comes from
the dependency the session parameter declares (`Annotated[Session, Depends(get_db)]`, or
`= Depends(get_db)`), entered and closed as FastAPI does for one request. A database error
becomes one `RepoosError` naming where the session came from, with the password removed.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext

from fastapi.params import Depends
from sqlalchemy import create_engine
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session

from repoos_agent.errors import RepoosError
from repoos_agent.tabular.credentials import safe_url, without_password


@contextmanager
def endpoint_session(function: Callable, parameter: str, url: str | None = None) -> Iterator[Session]:
    """A session for `function`'s `parameter`: on `url` when given, else from the parameter's own dependency."""
    if url:
        try:
            engine = create_engine(url)
        except (SQLAlchemyError, ValueError, ImportError) as error:
            raise RepoosError(f"--db {safe_url(url)}: {type(error).__name__}: {without_password(url, str(error))}") from None
        where, opened = f"--db {safe_url(url)}", _on_engine(engine)
    else:
        dependency = session_dependency(function, parameter)
        where, opened = f"the session from `{dependency.__name__}`", _entered(dependency)
    session = None
    try:
        with opened as session:
            yield session
    except SQLAlchemyError as error:
        secret = url or (session.get_bind().url.render_as_string(hide_password=False) if session is not None else "")
        shown = safe_url(secret) if secret and not url else ""
        message = without_password(secret, str(error).splitlines()[0]) if secret else str(error).splitlines()[0]
        raise RepoosError(f"{where}{f' ({shown})' if shown else ''}: {type(error).__name__}: {message}") from None


def session_dependency(function: Callable, parameter: str) -> Callable:
    """The FastAPI dependency `parameter` of `function` declares, or a `RepoosError` saying to give `--db`."""
    try:
        declared = inspect.signature(function, eval_str=True).parameters[parameter]
    except (NameError, KeyError) as error:
        raise RepoosError(f"`{function.__name__}`: cannot read the annotation of `{parameter}` ({error}): give --db URL") from None
    candidates = [declared.default, *typing.get_args(declared.annotation)[1:]]
    for candidate in candidates:
        dependency = getattr(candidate, "dependency", None)
        if isinstance(candidate, Depends) and callable(dependency):
            if any(p.default is inspect.Parameter.empty for p in inspect.signature(dependency).parameters.values()):
                name = dependency.__name__
                raise RepoosError(f"`{function.__name__}`: the session dependency `{name}` takes arguments: give --db URL")
            return dependency
    raise RepoosError(f"`{function.__name__}`: `{parameter}` declares no `Depends(...)` to get a session from: give --db URL")


def _entered(dependency: Callable) -> AbstractContextManager[Session]:
    """The dependency as FastAPI enters it: a generator runs to its `yield`, and on to its end when done."""
    if inspect.isgeneratorfunction(dependency):
        return contextmanager(dependency)()
    return nullcontext(dependency())


@contextmanager
def _on_engine(engine) -> Iterator[Session]:
    try:
        with Session(engine) as session:
            yield session
    finally:
        engine.dispose()
