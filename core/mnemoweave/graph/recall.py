"""The graph in recall: which of the store's entities a prompt names, and which texts name
them too.

A prompt is read on the answer path, so it is read cheaply: the shapes and names of
extract.py without jieba's part-of-speech tags, and its words one to three at a time looked
up among the keys the store already holds ("the upload client" finds `UploadClient`,
"上传客户端" finds what a memory wrote as 上传客户端（UploadClient）). Each entity found
weighs what it tells apart: log(1 + texts / texts naming it), so the project's own
language or framework, named everywhere, says little. A text naming one of them holds the
prompt's words that named it, however it writes it (the relevance gate counts them)."""

from __future__ import annotations

import functools
import math
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass

from mnemoweave.graph.extract import key, mentions
from mnemoweave.recall import wordinfo
from mnemoweave.store import graph as graph_table
from mnemoweave.text import cjk_count, stem, tokens

LONGEST = 3  # words of a prompt looked up together
COMMON = 12.0  # nats: a single word saying less than this in general text ("make", "app",
# "release") is too common to name an entity by itself, unless written as code is


@dataclass(frozen=True)
class Named:
    """The store's entities a prompt names: each one's weight, and the prompt's terms (as
    the relevance gate spells them) that named it."""

    weights: dict[int, float]
    terms: dict[int, frozenset[str]]


def _terms(words: Sequence[str]) -> frozenset[str]:
    return frozenset(w if cjk_count(w) else stem([w])[0] for w in words)


def word_keys(text: str) -> dict[str, tuple[str, ...]]:
    """The keys a text may name a known entity by, one to LONGEST words at a time (a
    single common word names none), each with the words that wrote it."""
    found: dict[str, tuple[str, ...]] = {}
    words = tokens(text)
    for size in range(1, LONGEST + 1):
        for start in range(len(words) - size + 1):
            part = tuple(words[start : start + size])
            joined = " ".join(part)
            if size == 1 and (len(joined) < 2 or wordinfo.information(joined) < COMMON):
                continue
            found.setdefault(key(joined), part)
            if cjk_count(joined):
                found.setdefault(key(joined.replace(" ", "")), part)
    return found


@functools.lru_cache(maxsize=256)
def prompt_keys(query: str) -> dict[str, frozenset[str]]:
    """The keys a prompt may name an entity by, each with the terms that wrote it."""
    found: dict[str, frozenset[str]] = {}
    for mention in mentions(query, chinese=False):
        found.setdefault(mention.key, _terms(tokens(mention.name)))
    for k, words in word_keys(query).items():
        found.setdefault(k, _terms(words))
    return found


def prompt_entities(db: sqlite3.Connection, query: str) -> Named:
    """The store's entities the prompt names, with their weights and terms."""
    keys = prompt_keys(query)
    ids = {k: eid for k, (eid, _) in graph_table.entities_of(db, keys).items()}
    if not ids:
        return Named({}, {})
    total = graph_table.texts_read(db)
    counts = graph_table.text_counts(db, sorted(set(ids.values())))
    weights = {eid: math.log(1 + total / max(1, counts.get(eid, 0))) for eid in ids.values()}
    terms: dict[int, frozenset[str]] = {}
    for k, eid in ids.items():
        terms[eid] = terms.get(eid, frozenset()) | keys[k]
    return Named(weights, terms)


def named(
    db: sqlite3.Connection, table: str, wanted: Named
) -> dict[int, tuple[float, frozenset[str]]]:
    """Texts of `table` naming any of the `wanted` entities: the share of their weight each
    names, and the prompt's terms that named them."""
    total = sum(wanted.weights.values())
    if not total:
        return {}
    out: dict[int, tuple[float, frozenset[str]]] = {}
    for rid, eid in graph_table.naming(db, table, list(wanted.weights)):
        share, terms = out.get(rid, (0.0, frozenset()))
        out[rid] = (share + wanted.weights[eid] / total, terms | wanted.terms[eid])
    return out


NEIGHBOURS = 3  # nearest neighbours of each entity one hop of expansion follows


def expansion(
    db: sqlite3.Connection,
    query: str,
    seeds: Sequence[int],
    projects: Sequence[str] | None,
    limit: int,
) -> list[tuple[int, str, str]]:
    """One hop through the graph: the active memories (of `projects`, None: any) naming
    the nearest neighbours of the entities the query names (else of those the memories
    `seeds` name), the closest first; each as (memory id, the entity it came from, the
    neighbour it names)."""
    start = list(prompt_entities(db, query).weights) or graph_table.named_by(db, seeds)
    out: dict[int, tuple[int, str, str]] = {}
    ranked = []
    for eid in start:
        for neighbour, shared in graph_table.neighbours(db, eid, NEIGHBOURS, projects):
            ranked.append((shared, eid, neighbour))
    ranked.sort(key=lambda item: -item[0])
    names = graph_table.names(db, [e for _, a, b in ranked for e in (a, b)])
    for _, eid, neighbour in ranked:
        for mid in graph_table.memories_naming(db, neighbour, projects):
            if mid not in seeds and mid not in out:
                out[mid] = (mid, names[eid], names[neighbour])
    return list(out.values())[:limit]
