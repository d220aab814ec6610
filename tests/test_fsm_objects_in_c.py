"""The objects built in C equal those Python's code builds, on the streams a kernel grows and on any a wrong one might:
nested lists as `nested.rebuild` makes them, tuples as `ir.tuple_element` reads each cell."""

from __future__ import annotations

import random

import numpy as np
import pytest

from repoos_agent.fsm import ir
from repoos_agent.fsm.nested import rebuild
from repoos_agent.fsm.objects_in_c import native_ints, native_rebuild, native_tuples

RNG = random.Random(45)


NO_HEADERS = "the interpreter's headers (Python.h) are not installed: the objects are built in Python"


def built(helper):
    """The helper, or the test skipped where it cannot be built here."""
    if helper is None:
        pytest.skip(NO_HEADERS)
    return helper


@pytest.fixture(scope="module")
def in_c():
    return built(native_rebuild())


@pytest.fixture(scope="module")
def tuples_in_c():
    return built(native_tuples())


def _stream(length: int, low: int, high: int) -> list[int]:
    return [RNG.randint(low, high) for _ in range(length)]


def test_rows_of_fields_as_a_splitter_grows_them(in_c):
    characters = 'a,b,"c d"\nééé,🎉,\n'
    fields = [0, 1, 2, 3, 5, 8, 9, 12, 13, 14, 15, 15]
    rows = [0, 6, 6, 12]
    assert in_c(characters, [np.array(rows), np.array(fields)]) == rebuild(characters, [rows, fields])


@pytest.mark.parametrize("depth", [1, 2, 3])
def test_any_streams_rebuild_as_python_slices_them(in_c, depth):
    """Odd lengths (a half pair lost), negative and out-of-range positions, ends before starts: as Python slices."""
    for _ in range(300):
        characters = "".join(RNG.choices("ab,é🎉\n", k=RNG.randrange(30)))
        streams = [_stream(RNG.randrange(12), -8, 40) for _ in range(depth)]
        got = in_c(characters, [np.array(stream, dtype=np.int64) for stream in streams])
        assert got == rebuild(characters, streams), (characters, streams)
        assert type(got) is list


def test_each_rebuilt_list_is_a_new_object_as_the_source_s_brackets_made_it(in_c):
    rows = in_c("abab", [np.array([0, 2, 0, 2]), np.array([0, 2, 2, 4])])
    assert rows == [["ab"], ["ab"]] and rows[0] is not rows[1]


@pytest.mark.parametrize("kinds", [(ir.INT,), (ir.STR, ir.INT, ir.INT), (ir.CHAR, ir.STR, ir.INT)])
def test_tuples_read_each_cell_as_its_kind_says(tuples_in_c, kinds):
    """Ints, characters (a lone surrogate too) and `str` constants, and cells outside what a kind holds kept as ints."""
    strings = ("STRING", "NUMBER", "NAME")
    edges = [0, 1, 0x7F, 0xD800, 0x10FFFF, 0x110000, -1, -3, -4, -(1 << 63), (1 << 63) - 1]
    for _ in range(200):
        cells = [
            RNG.choice(edges) if RNG.random() < 0.5 else RNG.randint(-5, 0x11000) for _ in range(len(kinds) * RNG.randrange(6))
        ]
        want = [
            tuple(
                ir.tuple_element(cell, kind, strings) for cell, kind in zip(cells[start : start + len(kinds)], kinds, strict=True)
            )
            for start in range(0, len(cells), len(kinds))
        ]
        got = tuples_in_c(np.array(cells, dtype=np.int64), kinds, strings)
        assert got == want and all(type(a) is type(b) for x, y in zip(got, want, strict=True) for a, b in zip(x, y, strict=True))


@pytest.mark.parametrize("unsigned", [False, True])
def test_ints_are_read_as_the_width_analysis_holds_them(unsigned):
    listed = built(native_ints())
    cells = np.array([0, 1, 256, 257, -1, -(1 << 63), (1 << 63) - 1], dtype=np.int64)
    want = cells.view(np.uint64).tolist() if unsigned else cells.tolist()
    assert listed(cells.ctypes.data, len(cells), unsigned) == want
