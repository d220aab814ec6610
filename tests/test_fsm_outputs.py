"""Lists of `str` arguments and sized outputs (tests/fixtures/fsm_outputs.py and the bundled luhn kernel): each one the
fsm track takes equal to the Python original on random and edge inputs (same values, same exceptions, arguments
alike after the call), each refused one refused at its line with its reason."""

from __future__ import annotations

import random
from functools import cache

import pytest

from kernels.fsm import luhn as luhn_kernel
from repoos_agent.fsm.compare import difference, outcome
from repoos_agent.fsm.differential import Cases, run_differential
from repoos_agent.fsm.lower import FsmRefusal, parameter_names
from repoos_agent.fsm.native import FsmNative, lower_for
from repoos_agent.ingest.classify import walk
from repoos_agent.ingest.parse import parse_source, read_source, text
from tests.conftest import ROOT
from tests.fixtures import fsm_as_written
from tests.fixtures import fsm_outputs as outputs

FIXTURE = ROOT / "tests/fixtures/fsm_outputs.py"
KERNEL = ROOT / "kernels/fsm/luhn.py"
RNG = random.Random(4545)
ODD_WORDS = ["", "\ud83d", "\ude00", "é", "日本", "🎉", "\x00", "\ud800", "aeiou", "AbE", "x" * 300]


@cache
def _nodes(path=FIXTURE):
    tree = parse_source(read_source(path), str(path))
    return {text(n.child_by_field_name("name")): n for n in walk(tree.root_node) if n.type == "function_definition"}


def compiled(name, *values, path=FIXTURE, module=outputs):
    node = _nodes(path)[name]
    return FsmNative(lower_for(node, dict(zip(parameter_names(node), values, strict=False))), getattr(module, name))


def never(*arguments):
    raise AssertionError(f"the original ran on {arguments!r}")


def natively(native: FsmNative) -> FsmNative:
    """The same build with an original that fails the test where it runs: what it returns, the C code computed."""
    return FsmNative(native.function, never)


def line_of(fragment: str, path=FIXTURE) -> int:
    return next(n for n, line in enumerate(read_source(path).splitlines(), 1) if fragment in line)


def some_words(alphabet: str, most: int = 12, longest: int = 20) -> list[str]:
    return ["".join(RNG.choices(alphabet, k=RNG.randrange(longest))) for _ in range(RNG.randrange(most))]


def agree(original, native, arguments):
    want, got = outcome(original, arguments), outcome(native, arguments)
    assert difference(want, got) is None, (arguments, want, got)


def test_luhn_over_a_list_of_str_equals_the_original():
    native = compiled("luhn", ["79927398713"], path=KERNEL, module=luhn_kernel)
    cases = [
        [],
        [""],
        ["0"],
        ["79927398713", "79927398710"],
        ["12a4"],
        ["١٢٣"],  # Arabic-Indic digits: not ASCII digits, a ValueError naming the character
        ["4111111111111111", "", "5"],
        ["\ud800"],
        luhn_kernel.init(50)["numbers"],
        *(some_words("0123456789", longest=22) for _ in range(80)),
        *(some_words("0123456789 x", most=4) for _ in range(40)),
    ]
    for numbers in cases:
        agree(luhn_kernel.luhn, native, [numbers])
    with pytest.raises(ValueError, match=r"^number 1 has a non-digit 'x' at 2$"):
        native(["0", "12x4"])
    assert native(["79927398713", "79927398710"]) == bytearray(b"\x01\x00")
    numbers = luhn_kernel.init(300)["numbers"]
    assert natively(native)(numbers) == luhn_kernel.luhn(numbers)
    with pytest.raises(ValueError, match=r"^number 0 is empty$"):
        natively(native)([""])


def test_other_arguments_than_a_list_of_str_run_the_original():
    native = compiled("longest", ["ab"])
    assert native(["ab", "abc"]) == 3
    for odd in [("ab", 3), ("ab", b"c"), "abc", b"ab", None, 7, ("a", "b")]:
        agree(outputs.longest, native, [odd])


@pytest.mark.parametrize(
    ("name", "alphabet", "rest"),
    [
        ("longest", "ab日🎉", ()),
        ("vowels_per_word", "aeiouxyzAE é", (0,)),
        ("vowels_per_word", "aeiouxyzAE é", (2,)),
        ("vowels_per_word", "aeiou", (-1,)),
        ("vowels_per_word", "aeiou", (-5,)),
        ("edges", "ab日\ud800", (0,)),
        ("edges", "ab", (-2,)),
        ("edges", "abc", (3,)),
        ("edges", "abc", (-4,)),
        ("picked", "ab日", (0,)),
        ("picked", "ab日", (-1,)),
        ("picked", "ab", (2,)),
        ("picked", "ab", (-3,)),
    ],
)
def test_the_strs_of_a_list_read_in_place_equal_the_original(name, alphabet, rest):
    native = compiled(name, ["ab"], *rest)
    for words in [[], [""], ODD_WORDS, *(some_words(alphabet) for _ in range(60))]:
        agree(getattr(outputs, name), native, [words, *rest])
    words = ["abc", "日本語", "aeiou🎉"]
    try:
        want = getattr(outputs, name)(words, *rest)
    except (IndexError, ValueError):
        return  # where Python raises, the original may run
    assert natively(native)(words, *rest) == want


def test_a_sized_bytearray_is_zero_filled_and_a_negative_size_raises_as_python():
    native = compiled("zeros", 3)
    for n in [0, 1, 2, 3, 4, 100, -1, -(2**40), 2**70, True]:
        agree(outputs.zeros, native, [n])
    with pytest.raises(ValueError, match=r"^negative count$"):
        native(-3)
    assert native(4) == bytearray(b"\x00\x00\x07\x00")


REFUSED = {
    "sliced_list": ("first = words[1:]", "`words[1:]`: only one `str` of `words` is read at a time"),
    "rebound": ("word = 3", "`word` is a `str` of `words` elsewhere; keep one type per name"),
    "returned_word": (
        "last = word",
        "`word` is a `str` of `words`: only its `len`, its truth, one character `s[i]` and `for c in s` (of a list: "
        "`for s in list`, `enumerate`, `s = list[k]` and `len`) are modelled",
    ),
    "copied_bytearray": (
        "out = bytearray(data)",
        "`bytearray(data)`: only `bytearray()` and `bytearray(n)` of an int are modelled as the output",
    ),
}


@pytest.mark.parametrize(("name", "fragment_reason"), sorted(REFUSED.items()))
def test_the_refused_ones_are_refused_at_their_line(name, fragment_reason):
    fragment, reason = fragment_reason
    argument = b"ab" if name == "copied_bytearray" else ["ab"]
    with pytest.raises(FsmRefusal) as refusal:
        compiled(name, argument)
    assert (refusal.value.line, refusal.value.reason) == (line_of(fragment), reason)


def test_the_differential_cases_draw_lists_of_str_and_the_native_luhn_passes_them():
    native = compiled("luhn", ["79927398713"], path=KERNEL, module=luhn_kernel)
    sample = (luhn_kernel.init(20)["numbers"],)
    cases = Cases(native.function, luhn_kernel.luhn, [sample], count=2_000)
    drawn = [case[0] for case in cases.arguments]
    assert all(type(case) is list and all(type(word) is str for word in case) for case in drawn)
    assert any(len(case) > 3 for case in drawn) and any("" in case for case in drawn)
    result = run_differential(native, cases)
    assert (result.checked, result.failing) == (2_000, None), result.describe()


def test_a_str_of_a_list_used_as_a_number_is_refused_at_its_use():
    with pytest.raises(FsmRefusal) as refusal:
        compiled("weighted_sum", ["a"], [1], path=ROOT / "tests/fixtures/fsm_as_written.py", module=fsm_as_written)
    assert (
        refusal.value.reason == "`values[i]`: a `str` of `values` is read through `for s in values`, `enumerate` or `s = values[k]`"
    )
