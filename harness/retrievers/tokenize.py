"""The lexical tokenizer: lowercase, split on ``\\w+`` (Unicode-aware), optional English stopword
removal, optional Porter stemming (PyStemmer, or snowballstemmer as a fallback, imported only when
asked for)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any

from harness.concepts.errors import HarnessError

TOKEN_RE = re.compile(r"\w+")

#: Lucene's default English stop set (``EnglishAnalyzer.ENGLISH_STOP_WORDS_SET``), 33 words.
ENGLISH_STOPWORDS: frozenset[str] = frozenset(
    """a an and are as at be but by for if in into is it no not of on or such that the their then
    there these they this to was will with""".split()
)

STEMMERS = ("none", "porter")


def _load_porter() -> Callable[[list[str]], list[str]]:
    """``words -> stems`` with the Porter algorithm; PyStemmer preferred (C), snowballstemmer else."""
    try:
        import Stemmer  # PyStemmer

        return Stemmer.Stemmer("porter").stemWords
    except ImportError:
        pass
    try:
        import snowballstemmer

        return snowballstemmer.stemmer("porter").stemWords
    except ImportError:
        raise HarnessError(
            "stemmer='porter' needs the PyStemmer package: pip install PyStemmer "
            "(or pip install snowballstemmer)"
        ) from None


class Tokenizer:
    """Callable ``text -> list of tokens``.

    ``stopwords``: ``"none"`` (default), ``"english"`` (Lucene's 33 words) or an iterable of words
    (compared after lowercasing). ``stemmer``: ``"none"`` (default) or ``"porter"``; stopwords are
    removed before stemming, as Lucene's EnglishAnalyzer does.
    """

    def __init__(self, stopwords: str | Iterable[str] | None = "none", stemmer: str | None = "none"):
        self.stopwords_name, self.stopwords = _resolve_stopwords(stopwords)
        self.stemmer_name = _resolve_stemmer(stemmer)
        self._stem_words = _load_porter() if self.stemmer_name == "porter" else None
        self._stem_cache: dict[str, str] = {}

    def __call__(self, text: str) -> list[str]:
        tokens = TOKEN_RE.findall(text.lower())
        if self.stopwords:
            stop = self.stopwords
            tokens = [t for t in tokens if t not in stop]
        if self._stem_words is not None:
            tokens = self._stem(tokens)
        return tokens

    def _stem(self, tokens: list[str]) -> list[str]:
        cache = self._stem_cache
        try:
            return [cache[t] for t in tokens]  # a query's words are known as a rule: one pass
        except KeyError:
            new = list({t: None for t in tokens if t not in cache})
            cache.update(zip(new, self._stem_words(new), strict=True))  # type: ignore[misc]
        return [cache[t] for t in tokens]

    def term(self, word: str) -> str | None:
        """The index term of one lowercase ``\\w+`` word (``None`` for a stopword): what
        ``self(word)`` yields for it, for tokenizers that look words up one at a time."""
        if word in self.stopwords:
            return None
        if self._stem_words is None:
            return word
        stem = self._stem_cache.get(word)
        if stem is None:
            stem = self._stem_cache[word] = self._stem_words([word])[0]
        return stem

    def config(self) -> dict[str, Any]:
        return {"tokenizer": r"lowercase \w+", "stopwords": self.stopwords_name, "stemmer": self.stemmer_name}


def _resolve_stopwords(value: str | Iterable[str] | None) -> tuple[str | list[str], frozenset[str]]:
    if value is None or value is False:
        return "none", frozenset()
    if isinstance(value, str):
        name = value.strip().lower()
        if name in ("none", ""):
            return "none", frozenset()
        if name in ("english", "en", "lucene"):
            return "english", ENGLISH_STOPWORDS
        raise HarnessError(f"unknown stopwords {value!r}: use 'none', 'english' or a list of words")
    try:
        words = sorted({str(w).lower() for w in value})
    except TypeError:
        raise HarnessError(f"stopwords must be 'none', 'english' or a list of words, not {value!r}") from None
    return words, frozenset(words)


def _resolve_stemmer(value: str | None) -> str:
    if value is None or value is False:
        return "none"
    name = str(value).strip().lower()
    if name in ("", "none"):
        return "none"
    if name == "porter":
        return "porter"
    raise HarnessError(f"unknown stemmer {value!r}: use one of {', '.join(STEMMERS)}")
