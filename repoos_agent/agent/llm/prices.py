"""What a completion cost in US dollars, for the models whose price we know, and nothing for the rest.

Prices change and differ between accounts, so the built-in table is small and dated, and
a JSON file named by `REPOOS_PRICES` extends or overrides it:

    {"gpt-4o-mini": {"input": 0.15, "output": 0.60}, "my-finetune": {"input": 0.3, "output": 1.2}}

(USD per million input / output tokens, keyed by the model name the backend was given).
An unknown model costs `None`, never a guess: a local model or a new one shows no cost
rather than a wrong one.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from repoos_agent.errors import RepoosError

PRICES_FILE_VARIABLE = "REPOOS_PRICES"


class PriceFileError(RepoosError):
    """The file named by REPOOS_PRICES cannot be read or is not a table of prices."""


@dataclass(frozen=True)
class ModelPrice:
    """US dollars per million tokens, billed separately for the prompt and the answer."""

    input_usd_per_million: float
    output_usd_per_million: float


# Standard (non-batch, uncached) list prices as published in 2026. Models whose price depends on
# the prompt's length (for example gemini-2.5-pro above 200k tokens) are left out on purpose.
BUILTIN_PRICES: Mapping[str, ModelPrice] = {
    "gpt-4o": ModelPrice(2.50, 10.00),
    "gpt-4o-mini": ModelPrice(0.15, 0.60),
    "gpt-4.1": ModelPrice(2.00, 8.00),
    "gpt-4.1-mini": ModelPrice(0.40, 1.60),
    "gpt-4.1-nano": ModelPrice(0.10, 0.40),
    "gemini-2.5-flash": ModelPrice(0.30, 2.50),
    "gemini-2.5-flash-lite": ModelPrice(0.10, 0.40),
}


class PriceTable:
    """Prices by exact model name; a dated snapshot (`gpt-4o-2024-05-13`) may be priced differently, so no fuzzy match."""

    def __init__(self, prices: Mapping[str, ModelPrice]) -> None:
        self._prices = dict(prices)

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] = os.environ) -> PriceTable:
        """The built-in prices, extended and overridden by the file named by REPOOS_PRICES if it is set."""
        prices = dict(BUILTIN_PRICES)
        path = environ.get(PRICES_FILE_VARIABLE)
        if path:
            prices.update(read_price_file(Path(path)))
        return cls(prices)

    def cost(self, model: str, input_tokens: int, output_tokens: int) -> float | None:
        """USD for one completion, or None when the model's price is unknown."""
        price = self._prices.get(model)
        if price is None:
            return None
        return (input_tokens * price.input_usd_per_million + output_tokens * price.output_usd_per_million) / 1_000_000


def cost(model: str, input_tokens: int, output_tokens: int) -> float | None:
    """USD for one completion with the built-in prices and REPOOS_PRICES; None when the model's price is unknown."""
    return PriceTable.from_environment().cost(model, input_tokens, output_tokens)


def read_price_file(path: Path) -> dict[str, ModelPrice]:
    """`{"model": {"input": USD, "output": USD}}` per million tokens; any other shape is an error that names the entry."""
    where = f"{PRICES_FILE_VARIABLE}={path}"
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise PriceFileError(f"{where}: cannot read: {error.strerror}") from None
    except json.JSONDecodeError as error:
        raise PriceFileError(f"{where}:{error.lineno}:{error.colno}: not JSON: {error.msg}") from None
    if not isinstance(document, dict):
        raise PriceFileError(f'{where}: expected an object like {{"model": {{"input": 0.15, "output": 0.6}}}}')
    return {model: _model_price(entry, f"{where}: {model!r}") for model, entry in document.items()}


def _model_price(entry: object, where: str) -> ModelPrice:
    if not isinstance(entry, dict) or set(entry) != {"input", "output"}:
        raise PriceFileError(f'{where}: expected {{"input": USD, "output": USD}} per million tokens')
    amounts = [entry["input"], entry["output"]]
    if not all(isinstance(amount, int | float) and not isinstance(amount, bool) and amount >= 0 for amount in amounts):
        raise PriceFileError(f"{where}: prices must be non-negative numbers, got {entry}")
    return ModelPrice(float(entry["input"]), float(entry["output"]))
