"""The relevance gate: is a memory or a past turn worth putting before the model?

Search ranks candidates against each other, so its fused scores say nothing about whether
the best one is on topic at all. The gate uses absolute signals instead, none of them taken
from the store's own statistics (a young store's handful of texts must not decide what a
prompt asks, and a store of 100,000 must not drown a direct hit):
- the prompt's words and how much each says (wordinfo.py: surprisal in general text),
  stopwords left out; Chinese is read as jieba's whole words, each credited in part when a
  text holds only a piece of it;
- coverage: the share of that information the text holds within its best window of two
  sentences (a long turn that scatters the prompt's words over a page does not hold
  them); matched: that information in nats (covering a prompt that names nothing in
  particular proves little); key: whether it holds the prompt's most informative word
  (a text about the same things but not the one asked about is a near miss);
- cosine: each model's cosine to the prompt, minus the cosine above which that model calls
  a text on topic; in another language than the prompt's it is a feature of its own
  (`cross_cosine`): there no word can match, and meaning alone must carry it.
A past turn takes each signal at the better of its own and that of the turn before it when
that turn is a candidate too: an answer is on topic when the question it answers is.
They combine into one score in [0, 1] (a logistic model whose weights live in
`GATE_WEIGHTS`, fitted on labelled on-topic and off-topic prompts by `bench/gate.py`). A
reviewed memory is woven when its score reaches `memory_gate` (config); exchanges of earlier
sessions, raw talk, need more: a prompt gets them when one reaches `weave_gate`, and then
every one that reaches `weave_line_gate`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from . import wordinfo
from .snippets import sentences
from .text import cjk_count, precise_words, stem, terms

if TYPE_CHECKING:
    from .engine import Engine

# The logistic models, with and without an embedding model: bias, then one weight per
# feature (see `Signals.features`).
GATE_WEIGHTS: Mapping[str, Mapping[str, float]] = {
    "hybrid": {
        "bias": -1.36,
        "coverage": 0.76,
        "matched": 1.12,
        "key": 1.08,
        "cosine": 5.88,
        "cross_cosine": 1.14,
        "cross": 1.12,
    },
    # without a model (not fitted): a memory that holds half the prompt's information
    # reaches the memory gate (0.40), an exchange that holds 70% the exchange gate (0.90)
    "lexical": {"bias": -6.9, "coverage": 13.0},
}

NOT_FOUND = -0.5  # the cosine signal of a text no model found near the query
WINDOW = 2  # sentences a text must hold the prompt's words within
MATCHED_SCALE = 10.0  # nats per unit of the matched feature
MATCHED_CAP = 4.0  # the matched feature at most (40 nats: a long, specific prompt)


@dataclass(frozen=True)
class Word:
    """One content word of a prompt: the term the index holds, how much it says, and the
    index terms of its pieces (a Chinese word the index may hold only in part)."""

    term: str
    information: float
    pieces: tuple[str, ...] = ()


def prompt_words(query: str) -> list[Word]:
    """The prompt's content words, each once, with their information."""
    found: dict[str, Word] = {}
    for word in precise_words(query):
        if cjk_count(word):
            pieces = tuple(p for p in dict.fromkeys(terms(word)) if p != word)
            found.setdefault(word, Word(word, wordinfo.information(word), pieces))
        else:
            term = stem([word])[0]
            if term not in found:
                found[term] = Word(term, wordinfo.information(word))
    return list(found.values())


@dataclass(frozen=True)
class Signals:
    """What the gate knows of one candidate (and of the turn before it, when that turn is a
    candidate too: an answer is on topic when the question it answers is)."""

    coverage: float
    cosine: float | None  # the best model's cosine minus its on-topic cosine; None: no model
    before: Signals | None = None
    matched: float = 0.0  # the information (nats) of the prompt the text holds
    key: float = 0.0  # the share of the prompt's most informative word the text holds
    same_language: bool = True  # in the prompt's language (else only meaning can match)

    def features(self) -> dict[str, float]:
        """The gate's inputs: each signal at the better of the candidate and its question;
        a cosine counts apart for a text in another language, where no word can match."""
        before = self.before or self
        found = {
            "coverage": max(self.coverage, before.coverage),
            "matched": min(max(self.matched, before.matched) / MATCHED_SCALE, MATCHED_CAP),
            "key": max(self.key, before.key),
        }
        if self.cosine is not None and before.cosine is not None:
            cosine = max(self.cosine, before.cosine)
            found["cosine" if self.same_language else "cross_cosine"] = cosine
            found["cross"] = 0.0 if self.same_language else 1.0
        return found


class Gate:
    """The relevance test for one query, built once and applied to each candidate."""

    def __init__(self, engine: Engine, query: str, table: str = "") -> None:
        self.words = prompt_words(query)
        self.wanted = [word.term for word in self.words]
        self.total = sum(word.information for word in self.words)
        self.weights = {word.term: word.information for word in self.words}  # for snippets
        informations = [word.information for word in self.words]
        self.key = informations.index(max(informations)) if informations else 0
        self.cutoffs = {channel.name: channel.relevant_cosine for channel in engine.channels}
        self.model = GATE_WEIGHTS["hybrid" if self.cutoffs else "lexical"]

    def held(self, text: str) -> tuple[float, float]:
        """The information of the prompt `text` holds within its best window of sentences,
        and the share of the prompt's most informative word it holds there."""
        if not self.total:
            return 0.0, 0.0
        parts = sentences(text) or [text]
        best: tuple[float, float] = (0.0, 0.0)
        for start in range(max(1, len(parts) - WINDOW + 1)):
            have = set(terms(" ".join(parts[start : start + WINDOW])))
            held = [self._held(word, have) for word in self.words]
            found = (sum(held), held[self.key] / self.words[self.key].information)
            best = max(best, found)
            if best[0] >= self.total:
                break
        return best

    @staticmethod
    def _held(word: Word, have: set[str]) -> float:
        if word.term in have:
            return word.information
        parts = [wordinfo.information(piece) for piece in word.pieces if piece in have]
        return min(word.information, max(parts, default=0.0))

    def coverage(self, text: str) -> float:
        return self.held(text)[0] / self.total if self.total else 0.0

    def signals(self, text: str, explain: Mapping[str, Any]) -> Signals:
        dense = explain.get("dense", {})
        cosine = None
        if self.cutoffs:  # a candidate no model found is further than any it did find
            cosine = max(
                (found["cosine"] - self.cutoffs.get(name, 1.0) for name, found in dense.items()),
                default=NOT_FOUND,
            )
        held, key = self.held(text)
        coverage = held / self.total if self.total else 0.0
        same = explain.get("same_language", 1.0) == 1.0
        return Signals(coverage, cosine, matched=held, key=key, same_language=same)

    def score(self, signals: Signals) -> float:
        z = self.model["bias"] + sum(
            self.model.get(name, 0.0) * value for name, value in signals.features().items()
        )
        return 1 / (1 + math.exp(-z))
