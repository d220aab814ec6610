"""The PyPy side of the `pypy` peer: run under `pypy3` (Python 3.9, no NumPy, none of the engine's packages), it
imports one kernel's module, holds the arguments it was sent, and answers the parent's requests one at a time.

Requests and replies are pickled frames (a 4-byte big-endian length, then the pickle) on stdin and stdout:
- `("load", root, module, function, arguments)`: import `module` with `root` on the path; `("loaded",)`;
- `("check",)`: one call on copies of the arguments; `("outcome", returned, arguments_after, raised)`, where
  `raised` is `(type name, message)` or None;
- `("time",)`: fresh copies made, then one call timed inside PyPy, so the pipe and the pickles stay off the
  clock; `("seconds", seconds)`;
- `("quit",)` ends it. A failure the kernel did not raise itself is `("error", text)`.

It imports nothing of the engine's: it runs on another interpreter.
"""

import contextlib
import copy
import importlib
import pickle
import struct
import sys
import time

PROTOCOL = 4
"""Pickles both interpreters read (PyPy 3.9 and CPython 3.11)."""


def _read(stream):
    header = stream.read(4)
    if len(header) < 4:
        return None
    (size,) = struct.unpack(">I", header)
    return pickle.loads(stream.read(size))


def _write(stream, message):
    payload = pickle.dumps(message, protocol=PROTOCOL)
    stream.write(struct.pack(">I", len(payload)) + payload)
    stream.flush()


def _answer(request, state):
    """The reply to one request; `state` holds the loaded function and its arguments."""
    kind = request[0]
    if kind == "load":
        _, root, module, function, arguments = request
        sys.path.insert(0, root)
        state["function"] = getattr(importlib.import_module(module), function)
        state["arguments"] = arguments
        return ("loaded",)
    function, arguments = state["function"], state["arguments"]
    copies = copy.deepcopy(arguments)
    if kind == "time":
        start = time.perf_counter()
        with contextlib.suppress(Exception):  # the kernel's own exception is its outcome; `check` compared it already
            function(*copies)
        return ("seconds", time.perf_counter() - start)
    try:
        returned = function(*copies)
    except Exception as exc:  # what the kernel raises is compared with CPython's, type and message
        return ("outcome", None, copies, (type(exc).__name__, str(exc)))
    return ("outcome", returned, copies, None)


def main():
    """Answer requests until `quit` or the end of stdin."""
    source, sink = sys.stdin.buffer, sys.stdout.buffer
    state = {}
    while True:
        request = _read(source)
        if request is None or request[0] == "quit":
            return
        try:
            reply = _answer(request, state)
        except Exception as exc:  # the driver's own failure (an import, a pickle): the parent reports it
            reply = ("error", f"{type(exc).__name__}: {exc}")
        _write(sink, reply)


if __name__ == "__main__":
    main()
