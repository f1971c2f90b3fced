"""BM25 retrieval over a small passage collection (documents or tool descriptions).

Why a custom tokenizer: the collections mix English and Chinese. CJK runs are segmented with
jieba (search mode, so compound words also match their parts); everything else is lower-cased
and split into word characters. Ties are broken by passage index so rankings are deterministic.
"""

from __future__ import annotations

import logging
import re

import bm25s
import jieba
import msgspec

jieba.setLogLevel(logging.WARNING)

_CJK_RUN = re.compile(r"([\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+)")
_WORD = re.compile(r"[0-9a-z]+")
_PUNCT_ONLY = re.compile(r"^\W+$")


def tokenize(text: str) -> list[str]:
    """English words lower-cased; CJK runs cut by jieba (search mode); punctuation dropped."""
    tokens: list[str] = []
    for i, part in enumerate(_CJK_RUN.split(text.lower().replace("_", " "))):
        if not part:
            continue
        if i % 2 == 1:  # a CJK run
            tokens.extend(t for t in jieba.lcut_for_search(part) if t.strip() and not _PUNCT_ONLY.match(t))
        else:
            tokens.extend(_WORD.findall(part))
    return tokens


class Hit(msgspec.Struct, frozen=True):
    index: int
    score: float


class BM25Index:
    """Top-k BM25 over ``texts``; scores rounded to 4 decimals so responses compare stably."""

    def __init__(self, texts: list[str]):
        self.size = len(texts)
        self._bm25 = bm25s.BM25()
        corpus = [tokenize(t) or ["\u0000empty"] for t in texts]
        if corpus:
            self._bm25.index(corpus, show_progress=False)

    def search(self, query: str, k: int) -> list[Hit]:
        if self.size == 0 or k <= 0:
            return []
        tokens = [t for t in tokenize(query) if t in self._bm25.vocab_dict]
        if not tokens:
            return []
        scores = self._bm25.get_scores(tokens)
        ranked = sorted(range(self.size), key=lambda i: (-float(scores[i]), i))
        return [Hit(i, round(float(scores[i]), 4)) for i in ranked[:k] if scores[i] > 0]
