"""Module `str` constants as values (`fsm/str_values.py`), and the bundled JSON tokenizer that needs them: each
compiled function equals the Python original on random and edge inputs (the tuples it returns, the exception's
type and message), computed by the C code itself; what is not modelled is refused at its line."""

from __future__ import annotations

import json
import random
from functools import cache
from pathlib import Path

import pytest

from kernels.fsm import json_tokens as kernel
from repoos_agent.fsm.compare import difference, outcome
from repoos_agent.fsm.lower import FsmRefusal, parameter_names
from repoos_agent.fsm.native import FsmNative, lower_for
from repoos_agent.ingest.classify import walk
from repoos_agent.ingest.parse import parse_source, read_source, text
from tests.conftest import ROOT
from tests.fixtures import fsm_str_values as written

FIXTURE = ROOT / "tests/fixtures/fsm_str_values.py"
KERNEL = ROOT / "kernels/fsm/json_tokens.py"
RNG = random.Random(8259)


@cache
def _nodes(path: Path) -> dict:
    tree = parse_source(read_source(path), str(path))
    return {text(n.child_by_field_name("name")): n for n in walk(tree.root_node) if n.type == "function_definition"}


def never(*arguments: object) -> None:
    raise AssertionError(f"the original ran on {arguments!r}")


def alone(name: str, *values: object, path: Path = FIXTURE) -> FsmNative:
    """The compiled function that never hands a call to the original: what it returns, the C code computed."""
    node = _nodes(path)[name]
    return FsmNative(lower_for(node, dict(zip(parameter_names(node), values, strict=False))), never)


def assert_same(original, compiled: FsmNative, *arguments: object) -> None:
    want, got = outcome(original, arguments), outcome(compiled, arguments)
    assert difference(want, got) is None, (arguments, want, got)


def line_of(fragment: str, path: Path = FIXTURE) -> int:
    return next(n for n, line in enumerate(read_source(path).splitlines(), 1) if fragment in line)


def random_json(depth: int = 0) -> object:
    roll = RNG.random()
    if depth > 2 or roll < 0.5:
        return RNG.choice(
            [True, False, None, 0, -7, 120, 3.5, -0.25, 1e21, 2.5e-8, "", "a", 'q"uote', "back\\slash", "tab\t", "é日🎉", "\x1f"]
        )
    if roll < 0.75:
        return [random_json(depth + 1) for _ in range(RNG.randrange(4))]
    return {f"k{k}": random_json(depth + 1) for k in range(RNG.randrange(4))}


def mutated(document: str) -> str:
    """A document cut short, with a character changed, or with one inserted: the tokenizer's error paths."""
    at = RNG.randrange(len(document) + 1)
    roll = RNG.random()
    if roll < 0.3:
        return document[:at]
    piece = RNG.choice('"\\u0x-+.eE01tfnrl{}[]:, \n\x01é')
    return document[:at] + piece + document[at + (roll < 0.6) :]


EDGE_TEXT = [
    "",
    " ",
    "[]",
    "{}",
    "0",
    "-0",
    "-0.5e+10",
    "1E5",
    "true",
    "false",
    "null",
    '"\\u00e9\\n\\"\\\\\\/\\b\\f\\r\\t"',
    '"日本🎉"',
    "[1,2 , 3]\n",
    "\ud800",
    "01a",
]


@cache
def compiled_json_tokens() -> FsmNative:
    return alone("json_tokens", "", path=KERNEL)


def test_json_tokens_compiled_equals_python_on_documents_their_mutations_and_edges():
    compiled = compiled_json_tokens()
    documents = [json.dumps(random_json(), indent=RNG.choice((None, 1)), ensure_ascii=RNG.random() < 0.5) for _ in range(150)]
    inputs = [*EDGE_TEXT, kernel.init(2)["text"], *documents, *(mutated(document) for document in documents for _ in range(4))]
    for value in inputs:
        assert_same(kernel.json_tokens, compiled, value)
    assert compiled('{"a": [true, -1.5e3, null]}') == [
        ("{", 0, 1),
        ("string", 1, 4),
        (":", 4, 5),
        ("[", 6, 7),
        ("true", 7, 11),
        (",", 11, 12),
        ("number", 13, 19),
        (",", 19, 20),
        ("null", 21, 25),
        ("]", 25, 26),
        ("}", 26, 27),
    ]


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ('["abc', "unterminated string starting at 1"),
        ('"\\', "invalid escape at 1"),
        ('"\\x"', "invalid escape at 1"),
        ('"\\u12g4"', "invalid \\u escape at 1"),
        ('"\\u12', "invalid \\u escape at 1"),
        ('"a\nb"', "control character '\\n' in string at 2"),
        ('"\x00"', "control character '\\x00' in string at 1"),
        ("01", "leading zero in number at 0"),
        ("[-01]", "leading zero in number at 1"),
        ("-", "number without digits at 0"),
        ("-a", "number without digits at 0"),
        ("1.", "number without digits after the point at 0"),
        ("1.e5", "number without digits after the point at 0"),
        ("1e", "number without digits in the exponent at 0"),
        ("2E+x", "number without digits in the exponent at 0"),
        ("tru", "invalid literal at 0: expected true"),
        ("[nul]", "invalid literal at 1: expected null"),
        ("fals", "invalid literal at 0: expected false"),
        ("x", "unexpected character 'x' at 0"),
        ("[1, é]", "unexpected character 'é' at 4"),
        ("NaN", "unexpected character 'N' at 0"),
    ],
)
def test_json_tokens_compiled_raises_each_error_as_python_does(value, message):
    compiled = compiled_json_tokens()
    with pytest.raises(ValueError) as python:
        kernel.json_tokens(value)
    with pytest.raises(ValueError) as native:
        compiled(value)
    assert str(native.value) == str(python.value) == message


def test_str_constants_by_name_from_a_dict_and_beside_characters_equal_python():
    compiled = alone("words", "")
    for value in [
        "",
        "if",
        "i",
        "else x",
        "whilst",
        "while(0) 12 e",
        "ünïcode if",
        *(
            "".join(RNG.choices(["if", "else", "while", "i", "e", "w", "0", "12", " ", "(", "x", "é"], k=RNG.randrange(12)))
            for _ in range(300)
        ),
    ]:
        assert_same(written.words, compiled, value)
    assert compiled("if x0 (") == [("if", 0, 2), ("word", 3, 4), ("kw", 4, 5), ("(", 6, 7)]


def test_a_local_named_as_a_constant_is_the_local():
    compiled = alone("shadowed", "")
    for value in ["", "a", "word"]:
        assert_same(written.shadowed, compiled, value)
    assert compiled("ab") == [(2, 0), (2, 1)]


def test_a_raised_message_shows_the_constant_the_local_holds():
    compiled = alone("expected_closer", "")
    for value in ["", "()", "(]", "[", "{}", "a(b", *("".join(RNG.choices("()[]{}a", k=RNG.randrange(8))) for _ in range(200))]:
        assert_same(written.expected_closer, compiled, value)
    with pytest.raises(ValueError, match=r"^at 1: expected '\]', then   \]\|$"):
        compiled("x[)")


@pytest.mark.parametrize(
    ("name", "arguments", "fragment", "reason"),
    [
        (
            "word_as_number",
            ("",),
            "return len(text) + word",
            "`word` holds a `str` constant: only `len(...)` of it, comparing a slice of a `str` with it, a tuple "
            "appended to the output and a raised message are modelled",
        ),
        ("word_then_int", ("",), "word = len(text)", "`word` holds a `str` constant elsewhere; keep one type per name"),
        (
            "two_shapes",
            ("",),
            "out.append((i, i))",
            "`(i, i)` is a tuple of (an int, an int) here and of (a str, an int) elsewhere: the tuples of `out` have one shape",
        ),
        ("chained", ("",), "first = word = WORD", "`word` would hold the `str` constant of `first`: bind it alone"),
        ("slice_with_int", ("", 0), "return text[0:2] == n", "`text[0:2] == n`: a slice of a `str` is compared only with a `str`"),
    ],
)
def test_what_is_not_modelled_is_refused_at_its_line(name, arguments, fragment, reason):
    with pytest.raises(FsmRefusal) as refused:
        alone(name, *arguments)
    assert (refused.value.line, refused.value.reason) == (line_of(fragment), reason)
