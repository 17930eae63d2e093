"""Instruction tokenizer, derived here from the training instructions (no downloads).

Word-level with hashed fallback: lower-cased words, single digits and punctuation marks are tokens; the most
frequent training words get their own ids, every other word falls into one of ``n_buckets`` hash buckets
(crc32, stable across runs and machines), so a word never seen in training still maps to a fixed id instead
of a shared ``[UNK]``. Digits are split one by one so numbers of any size share the ten digit embeddings.

Optionally each word also gets character n-gram ids (fastText-style, hashed into ``ngram_buckets``): the network
adds their embeddings to the word's, so a word never seen in training, or a misspelt one, still gets an
embedding built from its spelling, and two words that share letters start out close.
"""

from __future__ import annotations

import re
import zlib
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

PAD, CLS_TEXT, UNK = 0, 1, 2
SPECIALS = ("[PAD]", "[TXT]", "[UNK]")
_TOKEN_RE = re.compile(r"[a-z]+|\d|[^\sa-z\d]")


def words(text: str) -> list[str]:
    """Split an instruction into lower-case words, single digits and punctuation marks."""
    return _TOKEN_RE.findall(text.lower())


@dataclass
class Tokenizer:
    """Maps instructions to id sequences.

    Attributes:
        vocab: word -> id for the in-vocabulary words (ids after the specials).
        n_buckets: number of hash buckets for out-of-vocabulary words (ids after the vocabulary).
        max_len: ids per instruction, including the leading ``[TXT]``.
    """

    vocab: dict[str, int] = field(default_factory=dict)
    n_buckets: int = 256
    max_len: int = 48
    ngram_buckets: int = 0
    ngrams_per_word: int = 12

    @property
    def vocab_size(self) -> int:
        return len(SPECIALS) + len(self.vocab) + self.n_buckets

    @classmethod
    def build(cls, texts: Iterable[str], max_words: int = 1500, min_count: int = 2, n_buckets: int = 256,
              max_len: int = 48, ngram_buckets: int = 0, ngrams_per_word: int = 12) -> "Tokenizer":
        """Derive the vocabulary from training instructions: words seen at least ``min_count`` times."""
        counts = Counter(w for t in texts for w in words(t))
        digits = [str(d) for d in range(10)]
        ranked = digits + [w for w, n in counts.most_common() if n >= min_count and w not in digits]
        ranked = ranked[:max_words]
        vocab = {w: len(SPECIALS) + i for i, w in enumerate(ranked)}
        return cls(vocab=vocab, n_buckets=n_buckets, max_len=max_len, ngram_buckets=ngram_buckets,
                   ngrams_per_word=ngrams_per_word)

    def word_id(self, w: str) -> int:
        i = self.vocab.get(w)
        if i is not None:
            return i
        return len(SPECIALS) + len(self.vocab) + zlib.crc32(w.encode("utf-8")) % self.n_buckets

    def encode(self, text: str) -> list[int]:
        """``[TXT] w1 w2 ...`` ids, truncated to ``max_len`` (never padded)."""
        return ([CLS_TEXT] + [self.word_id(w) for w in words(text)])[: self.max_len]

    def word_ngrams(self, w: str) -> list[int]:
        """Hashed character 2- and 3-gram ids of ``<w>`` in [1, ngram_buckets] (0 is padding), at most
        ``ngrams_per_word`` (the first ones: a word's start says most)."""
        s = f"<{w}>"
        grams = [s[i: i + n] for n in (3, 2) for i in range(len(s) - n + 1)]
        return [1 + zlib.crc32(g.encode("utf-8")) % self.ngram_buckets for g in grams][: self.ngrams_per_word]

    def encode_ngrams(self, text: str) -> list[list[int]]:
        """Per id of :meth:`encode`, its n-gram ids (none for ``[TXT]``); empty lists when n-grams are off."""
        n = len(self.encode(text))
        if not self.ngram_buckets:
            return [[] for _ in range(n)]
        return ([[]] + [self.word_ngrams(w) for w in words(text)])[:n]

    def to_dict(self) -> dict[str, Any]:
        return {"kind": "word+hash", "vocab": self.vocab, "n_buckets": self.n_buckets, "max_len": self.max_len,
                "specials": list(SPECIALS), "ngram_buckets": self.ngram_buckets,
                "ngrams_per_word": self.ngrams_per_word}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Tokenizer":
        return cls(vocab={str(k): int(v) for k, v in d["vocab"].items()}, n_buckets=int(d["n_buckets"]),
                   max_len=int(d["max_len"]), ngram_buckets=int(d.get("ngram_buckets", 0)),
                   ngrams_per_word=int(d.get("ngrams_per_word", 12)))
