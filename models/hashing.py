"""Words as hashed ids: the word itself and its character trigrams, each hashed into a fixed table (crc32).

No vocabulary is learnt from the training instructions, so a word never seen in training (an unseen task's
wording, a name, a value on screen) still gets an embedding built from its spelling, and the instruction and the
screen text share one table: "Submit" on a button and "Submit" in the instruction hash alike.
"""

from __future__ import annotations

import re
import zlib

BUCKETS = 4096
IDS_PER_WORD = 8  # the word's own id plus up to 7 trigram ids
_WORD = re.compile(r"[a-z]+|\d+|[^\sa-z\d]")
#: Bump when the hashing changes (checked against the weights at load).
HASHING_VERSION = 1


def _h(s: str) -> int:
    return 1 + zlib.crc32(s.encode("utf-8")) % (BUCKETS - 1)  # 0 is padding


def words(text: str) -> list[str]:
    """Lower-case words, numbers and punctuation marks."""
    return _WORD.findall(text.lower())


def word_ids(word: str) -> list[int]:
    """The ids of one word: its own hash, then its trigrams' (with boundary marks), at most IDS_PER_WORD."""
    w = f"<{word}>"
    grams = [w[i:i + 3] for i in range(max(1, len(w) - 2))]
    return [_h("w:" + word)] + [_h("g:" + g) for g in grams[:IDS_PER_WORD - 1]]



def bag_ids(text: str, max_ids: int = 24) -> list[int]:
    """One id list for a whole short text (a line on screen, a term): its words' own ids, then trigrams."""
    ws = words(text)
    own = [_h("w:" + w) for w in ws]
    grams = [g for w in ws for g in word_ids(w)[1:]]
    return (own + grams)[:max_ids] or [_h("w:")]
