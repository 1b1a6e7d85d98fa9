"""The relevance gate: is a memory or a past turn worth putting before the model?

Search ranks candidates against each other, so its fused scores say nothing about whether
the best one is on topic at all. The gate uses absolute signals instead, none of them taken
from the store's own statistics (a young store's handful of texts must not decide what a
prompt asks, and a store of 100,000 must not drown a direct hit):
- the prompt's words and how much each says (wordinfo.py: surprisal in general text),
  stopwords left out; Chinese is read as jieba's whole words, each credited in part when a
  text holds only a piece of it; a text in the other language holds a word when it holds
  its glossary equivalent (text.translations: common software words, "部署" for "deploy")
  as a word of its own, not as a part of a compound name ("nimbus-search" names a service,
  it does not say "查找");
- coverage: the share of that information the text holds within its best window of two
  sentences (a long turn that scatters the prompt's words over a page does not hold
  them); matched: that information in nats (covering a prompt that names nothing in
  particular proves little); key: whether it holds the prompt's most informative word
  (a text about the same things but not the one asked about is a near miss);
- cosine: each model's cosine to the prompt, minus the cosine above which that model calls
  a text on topic; in another language than the prompt's it is a feature of its own
  (`cross_cosine`): there no word can match, and meaning alone must carry it.
A memory naming one of the prompt's entities (the knowledge graph: search says which of
the prompt's terms named them) holds those terms however it writes them.
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
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from mnemoweave.recall import wordinfo
from mnemoweave.recall.snippets import sentences
from mnemoweave.text import cjk_count, precise_words, stem, terms, translations

if TYPE_CHECKING:
    from mnemoweave.engine import Engine

# The logistic models, with and without an embedding model: bias, then one weight per
# feature (see `Signals.features`).
GATE_WEIGHTS: Mapping[str, Mapping[str, float]] = {
    "hybrid": {
        "bias": -1.92,
        "coverage": -0.26,
        "matched": 1.71,
        "key": 0.67,
        "cosine": 3.89,
        "cross_cosine": 0.68,
        "cross": 0.33,
    },
    # without a model (not fitted): at the default gates a memory must hold half the
    # prompt's information (0.50), an exchange 70% (0.94)
    "lexical": {"bias": -6.88, "coverage": 13.76},
}

NOT_FOUND = -0.5  # the cosine signal of a text no model found near the query
WINDOW = 2  # sentences a text must hold the prompt's words within
MATCHED_SCALE = 10.0  # nats per unit of the matched feature
MATCHED_CAP = 4.0  # the matched feature at most (40 nats: a long, specific prompt)
WINDOWS_KEPT = 2048  # texts whose windows' terms are remembered
COMPOUND = re.compile(r"\w+(?:[-_]\w+)+")  # names such as nimbus-search, job_timeout


@dataclass(frozen=True)
class Word:
    """One content word of a prompt: the term the index holds, how much it says, the index
    terms of its pieces (a Chinese word the index may hold only in part), and the terms that
    say it in the other language (text.translations)."""

    term: str
    information: float
    pieces: tuple[str, ...] = ()
    translations: tuple[str, ...] = ()


def prompt_words(query: str) -> list[Word]:
    """The prompt's content words, each once, with their information."""
    found: dict[str, Word] = {}
    for word in precise_words(query):
        term = word if cjk_count(word) else stem([word])[0]
        if term in found:
            continue
        pieces = tuple(p for p in dict.fromkeys(terms(word)) if p != word) if term == word else ()
        found[term] = Word(term, wordinfo.information(word), pieces, translations(term))
    return list(found.values())


@lru_cache(maxsize=WINDOWS_KEPT)
def windows(text: str, compounds_apart: bool) -> tuple[tuple[frozenset[str], frozenset[str]], ...]:
    """The terms of each window of WINDOW sentences of `text`, in order, with (when
    `compounds_apart`) the terms it holds outside compound names; the latest texts are
    remembered, as the same memories and turns come back prompt after prompt."""
    parts = sentences(text) or [text]
    found = []
    for start in range(max(1, len(parts) - WINDOW + 1)):
        window = " ".join(parts[start : start + WINDOW])
        have = frozenset(terms(window))
        alone = frozenset(terms(COMPOUND.sub(" ", window))) if compounds_apart else have
        found.append((have, alone))
    return tuple(found)


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
        self.translated = any(word.translations for word in self.words)
        informations = [word.information for word in self.words]
        self.key = informations.index(max(informations)) if informations else 0
        self.cutoffs = {channel.name: channel.relevant_cosine for channel in engine.channels}
        self.model = GATE_WEIGHTS["hybrid" if self.cutoffs else "lexical"]

    def held(self, text: str, named: frozenset[str] = frozenset()) -> tuple[float, float]:
        """The information of the prompt `text` holds within its best window of sentences,
        and the share of the prompt's most informative word it holds there; `named`: the
        terms of the prompt's entities the text names, however it writes them."""
        if not self.total:
            return 0.0, 0.0
        best: tuple[float, float] = (0.0, 0.0)
        for have, alone in windows(text, self.translated):
            held = [
                word.information if word.term in named else self._held(word, have, alone)
                for word in self.words
            ]
            found = (sum(held), held[self.key] / self.words[self.key].information)
            best = max(best, found)
            if best[0] >= self.total:
                break
        return best

    @staticmethod
    def _held(word: Word, have: frozenset[str], alone: frozenset[str]) -> float:
        """`alone`: the terms `have` holds outside compound names."""
        if word.term in have or any(other in alone for other in word.translations):
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
        named = frozenset(explain.get("named", ()))  # search's: the prompt's entities' terms
        if named:  # only what the text writes another way: its own words keep their windows
            named -= frozenset().union(*(have for have, _ in windows(text, self.translated)))
        held, key = self.held(text, named)
        coverage = held / self.total if self.total else 0.0
        same = explain.get("same_language", 1.0) == 1.0
        return Signals(coverage, cosine, matched=held, key=key, same_language=same)

    def score(self, signals: Signals) -> float:
        z = self.model["bias"] + sum(
            self.model.get(name, 0.0) * value for name, value in signals.features().items()
        )
        return 1 / (1 + math.exp(-z))
