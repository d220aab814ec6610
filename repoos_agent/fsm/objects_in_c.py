"""The Python objects an fsm kernel returns, built in C through Python's C API from the streams its C code grew.

A kernel that returns lists of strings (csv-split's rows of fields) or of tuples (json-tokens' tokens) runs its
scan in C and then spent most of its call building those objects in Python, a turn of the interpreter for each
string, row and tuple; here each is one call of the C API. The objects are the ones Python's code makes:
- nested lists (`nested.rebuild`): every slice taken as Python takes it (`PySequence_GetSlice`, with floor division
  of a pair's positions), so a stream a wrong variant cut short or filled with nonsense rebuilds exactly the same;
- lists of ints, and tuples of a flat list (`native.FsmNative._output`): each cell as `ir.tuple_element` reads it,
  an int, a character or a `str` constant; an int as unsigned where the width analysis holds it so.
Where the interpreter's headers are not installed, the helper is not built and the Python code runs instead.
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
from repoos_agent.fsm import ir

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

/* a list of ints: each cell as the int64 it is, or as the uint64 it is where the width analysis holds it unsigned */
PyObject *rp_ints(const int64_t *flat, int64_t n, int is_unsigned) {
    PyObject *list = PyList_New((Py_ssize_t)n);
    if (list == NULL) return NULL;
    for (Py_ssize_t i = 0; i < (Py_ssize_t)n; i++) {
        PyObject *item = is_unsigned ? PyLong_FromUnsignedLongLong((unsigned long long)(uint64_t)flat[i])
                                     : PyLong_FromLongLong((long long)flat[i]);
        if (item == NULL) { Py_DECREF(list); return NULL; }
        PyList_SET_ITEM(list, i, item);
    }
    return list;
}

/* kinds[j] for position j of each tuple: 'i' an int, 'c' a character, 's' a character or a `str` constant (a cell
   -k is strings[k - 1]); a cell outside what its kind holds is the int it is */
PyObject *rp_tuples(const int64_t *flat, int64_t n, const char *kinds, int width, PyObject *strings) {
    Py_ssize_t count = (Py_ssize_t)(n / width), constants = PyTuple_GET_SIZE(strings);
    PyObject *list = PyList_New(count);
    if (list == NULL) return NULL;
    for (Py_ssize_t t = 0; t < count; t++) {
        PyObject *tuple = PyTuple_New(width);
        if (tuple == NULL) { Py_DECREF(list); return NULL; }
        PyList_SET_ITEM(list, t, tuple);
        for (int j = 0; j < width; j++) {
            int64_t cell = flat[t * width + j];
            PyObject *item;
            if (kinds[j] == 's' && cell < 0 && cell >= -(int64_t)constants) {
                item = PyTuple_GET_ITEM(strings, (Py_ssize_t)(-1 - cell));
                Py_INCREF(item);
            } else if (kinds[j] != 'i' && cell >= 0 && cell <= 0x10FFFF) {
                item = PyUnicode_FromOrdinal((int)cell);
            } else {
                item = PyLong_FromLongLong(cell);
            }
            if (item == NULL) { Py_DECREF(list); return NULL; }
            PyTuple_SET_ITEM(tuple, j, item);
        }
    }
    return list;
}
"""

Rebuild = Callable[[str, Sequence[np.ndarray]], list]
Ints = Callable[[int, int, bool], list[int]]
Tuples = Callable[[np.ndarray, tuple[str, ...], tuple[str, ...]], list]
KIND_CODES = {ir.INT: "i", ir.CHAR: "c", ir.STR: "s"}


@cache
def _library() -> ctypes.PyDLL | None:
    """The helpers, built once (the kernel cache keeps them; PyDLL: a call holds the GIL, and an error it raises is
    raised in the caller), or None where they cannot be built here."""
    include = sysconfig.get_paths().get("include")
    if not include or not (Path(include) / "Python.h").exists():
        return None
    try:
        toolchain = default_toolchain()
        with_headers = replace(toolchain, flags=(*toolchain.flags, f"-I{include}"))
        library = build_shared_library(CSource(_SOURCE, (), (), (), (), "rp_objects"), with_headers)
    except CompileError:
        return None
    loaded = ctypes.PyDLL(str(library))
    loaded.rp_rebuild.restype = loaded.rp_tuples.restype = loaded.rp_ints.restype = ctypes.py_object
    loaded.rp_ints.argtypes = [ctypes.c_void_p, ctypes.c_int64, ctypes.c_int]
    loaded.rp_rebuild.argtypes = [ctypes.py_object, ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_int64), ctypes.c_int]
    loaded.rp_tuples.argtypes = [ctypes.c_void_p, ctypes.c_int64, ctypes.c_char_p, ctypes.c_int, ctypes.py_object]
    return loaded


def native_rebuild() -> Rebuild | None:
    """`nested.rebuild` in C, or None where the helpers cannot be built."""
    library = _library()
    if library is None:
        return None

    def rebuild(characters: str, streams: Sequence[np.ndarray]) -> list:
        kept = [np.ascontiguousarray(stream, dtype=np.int64) for stream in streams]
        pointers = (ctypes.c_void_p * len(kept))(*(stream.ctypes.data for stream in kept))
        lengths = (ctypes.c_int64 * len(kept))(*(len(stream) for stream in kept))
        return library.rp_rebuild(characters, pointers, lengths, len(kept))

    return rebuild


def native_ints() -> Ints | None:
    """A list of ints from `count` `int64` cells at an address, each read as unsigned where asked, in C; or None where
    the helpers cannot be built."""
    library = _library()
    if library is None:
        return None

    def ints(address: int, count: int, unsigned: bool) -> list[int]:
        return library.rp_ints(address, count, int(unsigned))

    return ints


def native_tuples() -> Tuples | None:
    """The tuples of a flat list of `int64` cells, each position of its kind (`ir.INT`, `ir.CHAR`, `ir.STR`), in C; or
    None where the helpers cannot be built. The flat list must hold whole tuples."""
    library = _library()
    if library is None:
        return None

    def tuples(flat: np.ndarray, kinds: tuple[str, ...], strings: tuple[str, ...]) -> list:
        cells = np.ascontiguousarray(flat, dtype=np.int64)
        codes = "".join(KIND_CODES[kind] for kind in kinds).encode()
        return library.rp_tuples(cells.ctypes.data, len(cells), codes, len(kinds), tuple(strings))

    return tuples
