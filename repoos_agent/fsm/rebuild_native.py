"""`nested.rebuild` in C, through Python's C API: the nested lists a splitter returns, built without the interpreter.

A kernel that returns lists of strings (csv-split's rows of fields) runs its scan in C and then spends most of its
call building those objects back from the streams the C code grew. In Python each string and each row costs a turn
of the interpreter; here each is one call of the C API. The result is the same objects `rebuild` makes: every
slice is taken as Python takes it (`PySequence_GetSlice`, with floor division of a pair's positions), so a stream a
wrong variant cut short or filled with nonsense rebuilds exactly as `rebuild` would. Where the interpreter's headers
are not installed, the helper is not built and `rebuild` runs instead.
"""

from __future__ import annotations

import ctypes
import sysconfig
from collections.abc import Callable, Sequence
from dataclasses import replace
from functools import cache
from pathlib import Path

import numpy as np

from repoos_agent.backends.cc import build_shared_library, default_toolchain
from repoos_agent.codegen import CSource
from repoos_agent.errors import CompileError

_SOURCE = r"""
#include <Python.h>
#include <stdint.h>

static int64_t rp_half(int64_t v) { return v >= 0 ? v / 2 : -((-v + 1) / 2); } /* Python's v // 2 */

/* o[a:b] as Python takes it; the fast paths only where the indexes need no adjusting */
static PyObject *rp_slice(PyObject *o, int64_t a, int64_t b) {
    if (a >= 0 && b >= a) {
        if (PyUnicode_CheckExact(o) && b <= PyUnicode_GET_LENGTH(o)) return PyUnicode_Substring(o, a, b);
        if (PyList_CheckExact(o)) return PyList_GetSlice(o, a, b);
    }
    return PySequence_GetSlice(o, (Py_ssize_t)a, (Py_ssize_t)b);
}

PyObject *rp_rebuild(PyObject *characters, const int64_t *const *streams, const int64_t *lengths, int count) {
    const int64_t *pairs = streams[count - 1];
    Py_ssize_t n = (Py_ssize_t)(lengths[count - 1] / 2);
    PyObject *level = PyList_New(n);
    if (level == NULL) return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = rp_slice(characters, pairs[2 * i], pairs[2 * i + 1]);
        if (item == NULL) { Py_DECREF(level); return NULL; }
        PyList_SET_ITEM(level, i, item);
    }
    for (int k = count - 2; k >= 0; k--) {
        const int64_t *stream = streams[k];
        Py_ssize_t m = (Py_ssize_t)(lengths[k] / 2);
        PyObject *up = PyList_New(m);
        if (up == NULL) { Py_DECREF(level); return NULL; }
        for (Py_ssize_t i = 0; i < m; i++) {
            PyObject *item = rp_slice(level, rp_half(stream[2 * i]), rp_half(stream[2 * i + 1]));
            if (item == NULL) { Py_DECREF(up); Py_DECREF(level); return NULL; }
            PyList_SET_ITEM(up, i, item);
        }
        Py_DECREF(level);
        level = up;
    }
    return level;
}
"""

Rebuild = Callable[[str, Sequence[np.ndarray]], list]


@cache
def native_rebuild() -> Rebuild | None:
    """The C rebuild, built once (the kernel cache keeps it), or None where it cannot be built here."""
    include = sysconfig.get_paths().get("include")
    if not include or not (Path(include) / "Python.h").exists():
        return None
    try:
        toolchain = default_toolchain()
        with_headers = replace(toolchain, flags=(*toolchain.flags, f"-I{include}"))
        library = build_shared_library(CSource(_SOURCE, (), (), (), (), "rp_rebuild"), with_headers)
    except CompileError:
        return None
    function = ctypes.PyDLL(str(library)).rp_rebuild  # PyDLL: the call holds the GIL, and a raised error is raised here
    function.restype = ctypes.py_object
    function.argtypes = [ctypes.py_object, ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_int64), ctypes.c_int]

    def rebuild(characters: str, streams: Sequence[np.ndarray]) -> list:
        kept = [np.ascontiguousarray(stream, dtype=np.int64) for stream in streams]
        pointers = (ctypes.c_void_p * len(kept))(*(stream.ctypes.data for stream in kept))
        lengths = (ctypes.c_int64 * len(kept))(*(len(stream) for stream in kept))
        return function(characters, pointers, lengths, len(kept))

    return rebuild
