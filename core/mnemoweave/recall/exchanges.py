"""Exchanges of earlier sessions: what the weave shows of a past turn.

A past turn is shown as its exchange, a user turn with the assistant turn that answered
it: a question with its answer, or not at all (a question nobody answered says nothing the
model can use, and a bare reply such as "Done." says nothing without its question). A
question the prompt repeats (the prompt's own earlier copy) or that the session was
already shown leaves only its answer.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mnemoweave.model import Hit, Line, iso
from mnemoweave.recall.snippets import snippet
from mnemoweave.store import turns as turns_table
from mnemoweave.text import bare, content_terms, normalise

if TYPE_CHECKING:
    from mnemoweave.engine import Engine

ASK_TOKENS = 40  # the most of an exchange's question it shows
ANSWER_TOKENS = 60  # the most of its answer
ECHO = 0.8  # share of the prompt's content terms an earlier copy of it holds
REACH = 8  # turns on each side of a hit an exchange is looked for in


@dataclass(frozen=True)
class Exchange:
    """A user turn and the assistant turn that answered it (either may be missing)."""

    ask: sqlite3.Row | None
    answer: sqlite3.Row | None

    @property
    def refs(self) -> tuple[str, ...]:
        return tuple(f"t_{row['id']}" for row in (self.ask, self.answer) if row is not None)

    def line(
        self, query: str, weights: Mapping[str, float], score: float, given: set[str]
    ) -> Line | None:
        """The exchange as one line: a question with its answer, or nothing. A question
        the prompt repeats, or one the session was already shown, shows only its answer; a
        bare reply is never shown alone; a question nobody answered is not shown (a
        statement is); an answer the session was shown leaves nothing to add."""
        ask, answer = self.ask, self.answer
        if answer is not None and f"t_{answer['id']}" in given:
            return None
        if ask is not None and (f"t_{ask['id']}" in given or echoes(ask["text"], query)):
            ask = None
        if answer is not None and bare(answer["text"]) and ask is None:
            answer = None
        if ask is None and answer is None:
            return None
        if answer is None and ask is not None and asks(ask):
            return None
        parts, refs = [], []
        if ask is not None:
            parts.append(f"user: {snippet(ask['text'], weights, ASK_TOKENS)}")
            refs.append(f"t_{ask['id']}")
        if answer is not None:
            parts.append(f"assistant: {snippet(answer['text'], weights, ANSWER_TOKENS)}")
            refs.append(f"t_{answer['id']}")
        first = ask if ask is not None else answer
        assert first is not None
        return Line(
            " → ".join(parts),
            refs[0],
            None,
            score,
            f"past · {(iso(first['ts']) or '')[:10]}",
            tuple(refs[1:]),
        )


def exchange_of(engine: Engine, hit: Hit) -> Exchange:
    """The exchange a past turn belongs to: a user turn with the last assistant turn before
    the next user turn; an assistant turn with the user turn before it."""
    seq = hit.extra["seq"]
    rows = turns_table.around(engine.db, hit.extra["session"], seq, REACH)
    at = next((i for i, row in enumerate(rows) if row["seq"] == seq), None)
    if at is None:
        return Exchange(None, None)
    if rows[at]["role"] == "user":
        answer: sqlite3.Row | None = None
        for row in rows[at + 1 :]:
            if row["role"] == "user":
                break
            answer = row
        return Exchange(rows[at], answer)
    start = at
    while start > 0 and rows[start - 1]["role"] == "assistant":
        start -= 1
    return Exchange(rows[start - 1] if start > 0 else None, rows[at])


def echoes(said: str, query: str) -> bool:
    """Whether an earlier turn is the prompt's own earlier copy: it says nothing the prompt
    does not, and most of what the prompt says."""
    if normalise(said) == normalise(query):
        return True
    earlier, now = set(content_terms(said)), set(content_terms(query))
    return bool(earlier) and earlier <= now and len(earlier) >= ECHO * len(now)


_QUESTION = re.compile(
    r"[?？]\s*$|^\s*(what|how|why|when|where|which|who|whose|can|could|would|should|is|are"
    r"|do|does|did|will|please)\b|吗|呢|什么|怎么|为什么|哪|多少|几[个点天次]|能不能|可不可以|请",
    re.IGNORECASE,
)


def asks(turn: sqlite3.Row) -> bool:
    """Whether a user turn asks something (a question, or a request the classifier calls a
    mission), rather than states something."""
    return turn["kind"] == "mission" or bool(_QUESTION.search(turn["text"]))
