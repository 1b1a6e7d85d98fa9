"""The knowledge tier: what the memory holds that a prompt needs.

Candidates come from hybrid search, plus the nearest by meaning alone (a hit in the other
language must not be crowded out by texts that merely share a word), and the relevance gate
(relevance.py) scores each: memories, cards not yet reviewed that cite a past candidate,
and the exchanges of earlier sessions (exchanges.py). A memory stands in for the turns it
came from.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from mnemoweave.model import Block, Hit, Line
from mnemoweave.recall import corrections
from mnemoweave.recall.exchanges import Exchange, exchange_of
from mnemoweave.recall.relevance import Gate, Signals
from mnemoweave.recall.retrieve import same_language
from mnemoweave.scope import visible
from mnemoweave.store import cards as cards_table
from mnemoweave.store import memories as memories_table
from mnemoweave.store import sessions as sessions_table
from mnemoweave.text import language

if TYPE_CHECKING:
    from mnemoweave.engine import Engine

KNOWLEDGE_K = 8  # memories the knowledge tier considers
PAST_K = 12  # past turns it considers when memories do not cover the prompt
DENSE_K = 4  # more of each it considers by meaning alone (another language's hits)
MEMORY_FIRST = 1.0  # block priority that puts every reviewed memory above every snippet


@dataclass(frozen=True)
class Weighed:
    """A search hit the knowledge tier considers, with what the relevance gate sees of it."""

    hit: Hit
    signals: Signals
    score: float  # the gate's score, 0-1


def weigh(
    engine: Engine, query: str, session: str | None, project: str | None
) -> tuple[list[Weighed], list[Weighed], Gate]:
    """The memories and the earlier sessions' turns the knowledge tier considers for a
    query, best first, each with its gate score (the turn gate is returned for snippets).
    A prompt that names nothing ("thanks!", "好的", "2+2?") asks nothing of memory."""
    gate = Gate(engine, query)
    if all(term.isdigit() for term in gate.wanted):
        return [], [], gate
    memories = [
        Weighed(hit, signals, gate.score(signals))
        for hit in _candidates(engine, query, KNOWLEDGE_K, project, "memories", None)
        for signals in [gate.signals(hit.text, hit.extra["explain"])]
    ]
    hits = _candidates(engine, query, PAST_K, project, "turns", session)

    own = {
        (hit.extra["session"], hit.extra["seq"]): gate.signals(hit.text, hit.extra["explain"])
        for hit in hits
    }
    past = []
    for hit in hits:
        at = (hit.extra["session"], hit.extra["seq"])
        asked = own.get((at[0], at[1] - 1)) if hit.extra["role"] == "assistant" else None
        signals = replace(own[at], before=asked)  # an answer is as on topic as its question
        past.append(Weighed(hit, signals, gate.score(signals)))
    past += proposals(engine, query, gate, hits, project)  # unreviewed, as raw talk is
    return memories, past, gate


def _memory_line(weighed: Weighed, now: float) -> Line:
    """A memory as a knowledge line; a card not yet reviewed says so, and names its turns."""
    hit = weighed.hit
    if hit.id.startswith("c_"):
        label = f"proposed · {hit.kind}"
        return Line(
            hit.text, hit.id, now - hit.created, weighed.score, label, tuple(hit.extra["evidence"])
        )
    return Line(hit.text, hit.id, now - hit.created, weighed.score, corrections.label(hit))


def _candidates(
    engine: Engine, query: str, k: int, project: str | None, source: str, session: str | None
) -> list[Hit]:
    """The best `k` hits of a hybrid search, then the best DENSE_K by meaning alone that
    are not among them: a hit in the other language must not be crowded out by texts that
    merely share a word with the prompt."""
    return engine.search(
        query,
        k=k,
        project=project,
        source=source,
        touch=False,
        exclude_session=session,
        by_meaning=DENSE_K,
    )


def knowledge_blocks(
    engine: Engine, query: str, session: str | None, project: str | None
) -> list[Block]:
    """Memories that pass the gate, then what is not reviewed: cards and exchanges of
    earlier sessions.

    A memory is woven when it reaches `memory_gate`. A prompt gets unreviewed lines when one
    of them reaches `weave_gate`; it then gets every one that reaches `weave_line_gate` (an
    on-topic prompt's evidence is often not its best match, while an off-topic prompt's
    weaker matches are noise). A past turn is
    woven as its exchange (see `exchange`), and an exchange that an active memory cites
    as evidence is woven as that memory instead: what was reviewed stands in for the
    turns it came from."""
    if not query.strip():
        return []
    now = time.time()
    memories, past, gate = weigh(engine, query, session, project)
    config = engine.config
    kept = {m.hit.id: _memory_line(m, now) for m in memories if m.score >= config.memory_gate}
    for m in memories:  # an earlier memory never outranks the one that corrects it
        by = m.hit.extra.get("earlier", {}).get("by")
        if m.hit.id in kept and by in kept:
            kept[m.hit.id] = replace(kept[m.hit.id], score=min(m.score, kept[by].score))
    if not any(p.score >= config.weave_gate for p in past):
        past = []  # nothing unreviewed is sure enough to let the others in
    threshold = min(config.weave_line_gate, config.weave_gate)
    exchanges: dict[tuple[str, ...], tuple[Weighed, Exchange]] = {}
    for p in past:
        if p.score < threshold:
            continue
        if p.hit.id.startswith("c_"):
            kept.setdefault(p.hit.id, _memory_line(p, now))
        else:
            found = exchange_of(engine, p.hit)
            exchanges.setdefault(found.refs, (p, found))
    turns = [ref for found in exchanges for ref in found]
    stand_ins = memories_table.citing(engine.db, turns, None)
    proposed_turns = {
        turn for ref, line in kept.items() if ref.startswith("c_") for turn in line.also
    }
    given = sessions_table.woven(engine.db, session) if session else set()
    visible_to = set(visible(project or ""))
    lines = []
    for p, found in exchanges.values():
        cited = [stand_ins[ref] for ref in found.refs if ref in stand_ins]
        if cited:  # the reviewed memory, never its evidence
            row = cited[0]
            ref = f"m_{row['id']}"
            if row["project"] in visible_to and ref not in kept:
                kept[ref] = Line(row["body"], ref, now - row["created"], p.score, row["kind"])
            continue
        if proposed_turns & set(found.refs):  # a proposal woven says what it came from
            continue
        line = found.line(query, gate.weights, p.score, given)
        if line is not None:
            lines.append(line)
    blocks = [Block("knowledge", tuple(kept.values()), "mnemoweave", MEMORY_FIRST)] if kept else []
    if lines:
        blocks.append(Block("knowledge", tuple(lines), "mnemoweave:past"))
    return blocks


def proposals(
    engine: Engine, query: str, gate: Gate, hits: list[Hit], project: str | None
) -> list[Weighed]:
    """The pending cards whose evidence is among the prompt's past candidates, as candidates
    of their own (judged as raw talk is, not being reviewed): what earlier sessions settled
    can reach a prompt before anyone reviews it, in a card's words."""
    found = cards_table.citing(engine.db, [hit.id for hit in hits], visible(project or ""))
    if not found:
        return []
    weighed = []
    for card, explain in zip(
        found, _explain(engine, query, [c.summary for c in found]), strict=True
    ):
        extra = {"evidence": list(card.evidence), "explain": explain}
        hit = Hit(
            card.id,
            card.suggested_kind,
            card.summary,
            0.0,
            card.project,
            card.created or 0.0,
            extra,
        )
        signals = gate.signals(card.summary, explain)
        weighed.append(Weighed(hit, signals, gate.score(signals)))
    return weighed


def _explain(engine: Engine, query: str, texts: list[str]) -> list[dict[str, Any]]:
    """What a search would say of texts that are not in the index: each model's cosine to
    the query, and whether a text is in the query's language."""
    asked = language(query)
    explained: list[dict[str, Any]] = [
        {"dense": {}, "same_language": float(same_language(asked, language(text)))}
        for text in texts
    ]
    from mnemoweave.remote import RemoteError, fell_back

    for channel in engine.searching(query):
        asking = engine.query_vector(channel, query)  # search's own, not made again
        try:
            vectors = channel.embedder.embed(texts)
        except RemoteError as exc:
            fell_back(f"embedding cards with {channel.name}", exc)
            continue
        for explain, vector in zip(explained, vectors, strict=True):
            explain["dense"][channel.name] = {"cosine": float(asking @ vector)}
    return explained
