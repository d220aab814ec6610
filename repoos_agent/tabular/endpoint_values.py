"""An endpoint's values from `NAME=VALUE` texts: the CLI's `--arg` and the MCP tool's `args` for a tabular target.

An endpoint takes numbers and text (a threshold, a limit, a region's name), not arrays, so a
value is an integer, else a float, else the text itself, kept verbatim: it is bound as a
parameter of the query, never formatted into its SQL, so a quote or `1 OR 1=1` is just text.
"""

from __future__ import annotations

from collections.abc import Sequence

from repoos_agent.inputs import InputError


def parse_endpoint_values(specs: Sequence[str]) -> dict[str, object]:
    """`NAME=VALUE` texts as the endpoint's keyword values, or an `InputError` naming the text that is not one."""
    values: dict[str, object] = {}
    for spec in specs:
        name, sep, text = spec.partition("=")
        if not sep or not name.strip().isidentifier():
            raise _malformed(spec)
        values[name.strip()] = _number_or_text(text)
    return values


def _malformed(spec: str) -> InputError:
    return InputError(lambda fields: f"{fields.entry} `{spec}`: expected NAME=VALUE")


def _number_or_text(text: str) -> int | float | str:
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            continue
    return text
