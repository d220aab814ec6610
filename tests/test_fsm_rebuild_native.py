"""The nested lists built in C equal `nested.rebuild`'s, on the streams a kernel grows and on any a wrong one might."""

from __future__ import annotations

import random

import numpy as np
import pytest

from repoos_agent.fsm.nested import rebuild
from repoos_agent.fsm.rebuild_native import native_rebuild

RNG = random.Random(45)


@pytest.fixture(scope="module")
def in_c():
    built = native_rebuild()
    if built is None:
        pytest.skip("the interpreter's headers (Python.h) are not installed: `rebuild` runs in Python")
    return built


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
