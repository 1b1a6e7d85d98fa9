"""Snippets of past turns: the sentences that match a query, with just enough around them.

A past turn can be long (an assistant's explanation, a pasted log); the weave shows the
part that answers the prompt instead of the whole turn or its first line.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from mnemoweave.text import cjk_count, estimate_tokens, terms

ELLIPSIS = "…"
# A sentence ends at 。！？!? or a period before a space, or at a line break.
_BREAK = re.compile(r"(?<=[。！？!?；;])|(?<=\.)(?=\s)|\n+")


def sentences(text: str) -> list[str]:
    """The text cut into sentences, each on one line, empty pieces dropped."""
    return [" ".join(piece.split()) for piece in _BREAK.split(text) if piece and piece.strip()]


def snippet(text: str, weights: Mapping[str, float], width: int) -> str:
    """At most `width` tokens of `text`: the sentence holding the most query weight, then
    its neighbours (the next one first) while they fit; "…" marks what was left out."""
    flat = " ".join(text.split())
    if estimate_tokens(flat) <= width:
        return flat
    parts = sentences(text)
    scores = [sum(weights.get(term, 0.0) for term in set(terms(part))) for part in parts]
    best = max(range(len(parts)), key=lambda i: (scores[i], -i))
    first = last = best
    used = estimate_tokens(parts[best])
    if used > width:  # one long sentence: its head (or the part around its first match)
        return _cut(parts[best], weights, width) + ("" if best == len(parts) - 1 else ELLIPSIS)
    grew = True
    while grew:
        grew = False
        for step in (last + 1, first - 1):
            if 0 <= step < len(parts) and used + estimate_tokens(parts[step]) + 1 <= width:
                used += estimate_tokens(parts[step]) + 1
                first, last = min(first, step), max(last, step)
                grew = True
    body = _join(parts[first : last + 1])
    return (ELLIPSIS if first else "") + body + (ELLIPSIS if last < len(parts) - 1 else "")


def _join(parts: list[str]) -> str:
    """Sentences back into text: no space after a Chinese sentence's full stop."""
    out = parts[0]
    for part in parts[1:]:
        out += ("" if cjk_count(out[-1]) or out[-1] in "。！？；：，" else " ") + part
    return out


def _cut(sentence: str, weights: Mapping[str, float], width: int) -> str:
    """A window of one over-long sentence, starting a little before its first match."""
    lowered = sentence.lower()
    found = [lowered.find(term) for term, weight in weights.items() if weight > 0]
    start = min((at for at in found if at >= 0), default=0)
    start = max(0, start - 24)
    if start and " " in sentence[start - 12 : start]:  # begin at a word
        start = sentence.rindex(" ", start - 12, start) + 1
    end = start
    while end < len(sentence) and estimate_tokens(sentence[start : end + 1]) <= width - 1:
        end += 1
    if end < len(sentence) and " " in sentence[start:end]:
        end = sentence.rindex(" ", start, end)
    return (ELLIPSIS if start else "") + sentence[start:end].strip()


COMPACT_TOKENS = 24  # of one search hit in brief


def compact(text: str, query: str) -> str:
    """A search hit in brief: its sentences that hold the query's words, up to
    COMPACT_TOKENS tokens (`get` shows the whole text)."""
    return snippet(text, dict.fromkeys(terms(query), 1.0), COMPACT_TOKENS)
