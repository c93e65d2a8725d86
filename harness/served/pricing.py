"""Per-model prices, USD per 1M input / output tokens: the standard tier, and the batch tier
(OpenAI's Batch API and Anthropic's Message Batches, both at 50% of the standard price on
:data:`PRICES_DATE`; no prompt-caching discounts). The built-in table was recorded from the
providers' public price pages on :data:`PRICES_DATE`; prices change, so check them before budgeting
and override as needed.

Override with a JSON or TOML file (``--prices FILE`` or ``HARNESS_PRICES``)::

    date = "2026-01-15"
    [models]
    "openai:gpt-4o-mini" = { input = 0.15, output = 0.60 }                  # batch: half of these
    "anthropic:claude-haiku-4-5" = { input = 1, output = 5, batch_input = 0.5, batch_output = 2.5 }
    "openai-compatible:llama3:8b" = { input = 0, output = 0 }

Keys are ``provider:model`` or a bare ``model`` (any provider); a key also matches longer model
names (``openai:gpt-4o-mini`` prices ``gpt-4o-mini-2024-07-18``), the longest key winning.
Models with no price (local servers, unless you add them) get ``cost_usd: null``.

Reasoning tokens are priced as output (``reasoning_per_1m`` in a price's record is its output rate): both
OpenAI and Anthropic count them in the output tokens they bill, so a reply's cost is input x the input rate +
output (reasoning included) x the output rate, the reasoning never counted twice.
"""

from __future__ import annotations

import json
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

from harness.concepts.errors import HarnessError

PRICES_DATE = "2025-11-01"
#: the batch tier's price as a share of the standard one, where a price gives no batch rates
BATCH_SHARE = 0.5
#: a price file is a regular file of at most this many bytes (never read unbounded)
MAX_PRICES_BYTES = 1 << 20
#: brackets nested deeper than this in a price file are refused before parsing
MAX_PRICES_DEPTH = 16
#: the highest price accepted, USD per 1M tokens (prices are finite: ``1e400`` is refused)
MAX_PRICE = 1_000_000.0

BUILTIN_PRICES: Mapping[str, tuple[float, float]] = MappingProxyType({
    # OpenAI
    "openai:gpt-5": (1.25, 10.00),
    "openai:gpt-5-mini": (0.25, 2.00),
    "openai:gpt-5-nano": (0.05, 0.40),
    "openai:gpt-4.1": (2.00, 8.00),
    "openai:gpt-4.1-mini": (0.40, 1.60),
    "openai:gpt-4.1-nano": (0.10, 0.40),
    "openai:gpt-4o": (2.50, 10.00),
    "openai:gpt-4o-2024-05-13": (5.00, 15.00),
    "openai:gpt-4o-mini": (0.15, 0.60),
    "openai:chatgpt-4o-latest": (5.00, 15.00),
    "openai:gpt-4-turbo": (10.00, 30.00),
    "openai:gpt-4": (30.00, 60.00),
    "openai:gpt-4-32k": (60.00, 120.00),
    "openai:gpt-3.5-turbo": (0.50, 1.50),
    "openai:gpt-3.5-turbo-instruct": (1.50, 2.00),
    "openai:o1": (15.00, 60.00),
    "openai:o1-mini": (1.10, 4.40),
    "openai:o1-pro": (150.00, 600.00),
    "openai:o3": (2.00, 8.00),
    "openai:o3-mini": (1.10, 4.40),
    "openai:o3-pro": (20.00, 80.00),
    "openai:o4-mini": (1.10, 4.40),
    # OpenAI embeddings, per 1M input tokens (developers.openai.com/api/docs/models/text-embedding-3-*)
    "openai:text-embedding-3-small": (0.02, 0.0),
    "openai:text-embedding-3-large": (0.13, 0.0),
    "openai:text-embedding-ada-002": (0.10, 0.0),
    # the embedded llama.cpp provider: local compute
    "local:": (0.0, 0.0),
    # Anthropic
    "anthropic:claude-opus-4-5": (5.00, 25.00),
    "anthropic:claude-opus-4-1": (15.00, 75.00),
    "anthropic:claude-opus-4": (15.00, 75.00),
    "anthropic:claude-sonnet-4-5": (3.00, 15.00),
    "anthropic:claude-sonnet-4": (3.00, 15.00),
    "anthropic:claude-haiku-4-5": (1.00, 5.00),
    "anthropic:claude-3-7-sonnet": (3.00, 15.00),
    "anthropic:claude-3-5-sonnet": (3.00, 15.00),
    "anthropic:claude-3-5-haiku": (0.80, 4.00),
    "anthropic:claude-3-opus": (15.00, 75.00),
    "anthropic:claude-3-sonnet": (3.00, 15.00),
    "anthropic:claude-3-haiku": (0.25, 1.25),
})


@dataclass(frozen=True)
class Price:
    input: float  # USD per 1M input tokens
    output: float  # USD per 1M output tokens
    key: str = ""
    source: str = "builtin"
    batch_input: float | None = None  # the batch tier (None: BATCH_SHARE of the standard price)
    batch_output: float | None = None

    @property
    def batch_rates(self) -> tuple[float, float]:
        """USD per 1M input and output tokens sent through a provider's batch API."""
        return (self.input * BATCH_SHARE if self.batch_input is None else self.batch_input,
                self.output * BATCH_SHARE if self.batch_output is None else self.batch_output)

    def cost(self, input_tokens: int, output_tokens: int, batch: bool = False) -> float:
        rate_in, rate_out = self.batch_rates if batch else (self.input, self.output)
        return (input_tokens * rate_in + output_tokens * rate_out) / 1_000_000

    def as_dict(self) -> dict[str, Any]:
        batch_in, batch_out = self.batch_rates
        return {"input_per_1m": self.input, "output_per_1m": self.output,
                "reasoning_per_1m": self.output, "reasoning": "part of the output tokens, priced as output",
                "batch_input_per_1m": batch_in,
                "batch_output_per_1m": batch_out, "batch_rates": "given" if self.batch_input is not None else
                f"{BATCH_SHARE:.0%} of standard", "key": self.key, "source": self.source}


class PriceTable:
    """Built-in prices plus overrides; :meth:`lookup` matches ``provider:model`` then ``model``."""

    def __init__(self, prices: dict[str, Price] | None = None, date: str = PRICES_DATE,
                 sources: list[str] | None = None) -> None:
        self.prices = dict(prices) if prices is not None else {
            k: Price(i, o, k, "builtin") for k, (i, o) in BUILTIN_PRICES.items()
        }
        self.date = date
        self.sources = sources or ["builtin"]

    @classmethod
    def load(cls, path: str | os.PathLike[str] | None = None) -> PriceTable:
        """Built-in table, then ``HARNESS_PRICES``, then ``path`` (later ones win)."""
        table = cls()
        for p in (os.environ.get("HARNESS_PRICES"), path):
            if p:
                table = table.overridden(Path(p).expanduser())
        return table

    def overridden(self, path: Path) -> PriceTable:
        data = _read(path)
        models = data.get("models", {k: v for k, v in data.items() if k != "date"})
        if not isinstance(models, dict):
            raise HarnessError(f"{path}: 'models' must be a table of model -> {{input, output}}")
        prices = dict(self.prices)
        for key, val in models.items():
            batch: tuple[Any, Any] = (None, None)
            if isinstance(val, dict):
                pair = (val.get("input"), val.get("output"))
                batch = (val.get("batch_input"), val.get("batch_output"))
            elif isinstance(val, list | tuple) and len(val) == 2:
                pair = (val[0], val[1])
            else:
                raise HarnessError(
                    f"{path}: price for {key[:80]!r} must be {{input = X, output = Y}} (USD per 1M tokens)"
                )
            if not all(_rate(x) for x in pair):
                raise HarnessError(f"{path}: price for {key[:80]!r} needs numbers input and output from 0 to "
                                   f"{MAX_PRICE:,.0f} (USD per 1M tokens)")
            if (batch[0] is None) != (batch[1] is None) or not all(x is None or _rate(x) for x in batch):
                raise HarnessError(f"{path}: price for {key[:80]!r}: give both batch_input and batch_output "
                                   f"(numbers from 0 to {MAX_PRICE:,.0f}), or neither (then the batch tier is half "
                                   "the price)")
            prices[key] = Price(float(pair[0]), float(pair[1]), key, str(path),
                                *(None if x is None else float(x) for x in batch))
        date = data.get("date", self.date)
        if not isinstance(date, str) or len(date) > 40:
            raise HarnessError(f"{path}: 'date' must be a short text such as \"2026-01-15\"")
        return PriceTable(prices, date, [*self.sources, str(path)])

    def lookup(self, provider: str, model: str) -> Price | None:
        for name in (f"{provider}:{model}", model):
            if name in self.prices:
                return self.prices[name]
        best: Price | None = None
        for key, price in self.prices.items():
            if ":" in key and key.split(":", 1)[0] == provider:
                target = f"{provider}:{model}"
            elif ":" not in key:
                target = model
            else:
                continue
            if target.startswith(key) and (best is None or len(key) > len(best.key)):
                best = price
        return best

    def cost(self, provider: str, model: str, input_tokens: int, output_tokens: int, batch: bool = False
             ) -> float | None:
        price = self.lookup(provider, model)
        return None if price is None else price.cost(input_tokens, output_tokens, batch)

    def describe(self) -> dict[str, Any]:
        return {"date": self.date, "sources": list(self.sources)}


def _rate(x: Any) -> bool:
    """A price: a finite number from 0 to :data:`MAX_PRICE` (``1e400`` reads as inf: refused)."""
    return isinstance(x, int | float) and not isinstance(x, bool) and 0 <= x <= MAX_PRICE and x == x


def _read(path: Path) -> dict[str, Any]:
    """The file's table, read with bounded work: a regular file (not a FIFO or ``/dev/zero``) of at
    most :data:`MAX_PRICES_BYTES`, UTF-8, nested at most :data:`MAX_PRICES_DEPTH` deep."""
    import stat

    try:
        st = path.stat()
        if not stat.S_ISREG(st.st_mode):
            raise HarnessError(f"prices file {path} is not a regular file")
        if st.st_size > MAX_PRICES_BYTES:
            raise HarnessError(f"prices file {path} is {st.st_size:,} bytes; at most {MAX_PRICES_BYTES:,} are read")
        with open(path, "rb") as fh:
            raw = fh.read(MAX_PRICES_BYTES + 1)
    except OSError as exc:
        raise HarnessError(f"cannot read prices file {path}: {exc.strerror or exc}") from exc
    if len(raw) > MAX_PRICES_BYTES:  # grew since stat
        raise HarnessError(f"prices file {path} is over {MAX_PRICES_BYTES:,} bytes")
    kind = "TOML" if path.suffix.lower() == ".toml" else "JSON"
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise HarnessError(f"{path}: not a {kind} prices file (not UTF-8 text at byte {exc.start})") from None
    if _depth(text) > MAX_PRICES_DEPTH:
        raise HarnessError(f"{path}: nested more than {MAX_PRICES_DEPTH} levels deep; a prices file is "
                           "a table of model -> {input, output}")
    try:
        data = tomllib.loads(text) if kind == "TOML" else json.loads(text)
    except (ValueError, RecursionError, tomllib.TOMLDecodeError) as exc:
        raise HarnessError(f"{path}: not valid {kind}: {str(exc)[:200]}") from None
    if not isinstance(data, dict):
        raise HarnessError(f"{path}: expected a table of prices")
    return data


def _depth(text: str) -> int:
    """An upper bound of the bracket nesting of ``text`` (brackets inside strings counted too), in
    linear time, so that a parser never recurses deeper than :data:`MAX_PRICES_DEPTH`."""
    depth = deepest = 0
    for ch in text:
        if ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth = max(0, depth - 1)
    return deepest
