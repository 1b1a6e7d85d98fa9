"""Does a new memory need a decision against an existing one? (conflict or update)

`detect(old, new, cosine)` compares two memory texts of the same project, with the main
model's cosine of their vectors when there is one (None: lexical only, lower recall). It
calls no model: the caller gives the cosine it already has. The rule has two parts.

1. **Same subject.** The texts are about the same thing when
   - the cosine is at least `SUBJECT_COSINE`, or at least `LOOSE_COSINE` with some shared
     content words; or
   - without a cosine, when enough of the shorter text's content words (stemmed; numbers
     left out) are in the other: at least `SUBJECT_OVERLAP` of them, and two or more.
   Different subjects ("the upload timeout is 10 s" / "the login page times out after
   10 minutes") never need a decision, however their values differ.

2. **Different values.** Two texts on the same subject need a decision when one of them
   says something the other cannot also hold:
   - an *update cue* in the new text ("actually", "instead", "now", "no longer",
     "switched / moved / migrated / replaced / upgraded / bumped / changed ... to",
     "from now on", "改成", "改为", "换成", "不再", "现在", "以后", "升级到", "迁到") and
     any difference below, or a word on either side the other lacks: an **update** (the
     new one replaces the old);
   - different *numbers* (ports, versions, timeouts, sizes, counts: "10 s" / "30 s",
     "Postgres 14" / "15") where both texts give one;
   - opposite *polarity*: one side prohibits or negates ("never", "don't", "not",
     "avoid", "不要", "别", "禁止", "不能", "不用") and the other does not;
   - a *different choice for the same slot*: the texts share most of their words and each
     has a word the other lacks ("built with Vite" / "build uses webpack"), or, across
     languages, where words cannot be compared, a cosine of at least `CROSS_COSINE`.
   These are a **conflict** (neither is obviously newer), unless the new text has an
   update cue.

Texts that share a subject and differ in none of these ways are compatible (both hold:
"run ruff before merging" / "ruff's config is in pyproject.toml"). Thresholds were set on
the dev half of `bench/data/conflict_pairs.jsonl` (`bench/run.py conflicts`), with the
default model (use-m3); the check half measures them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from mnemoweave.text import cjk_count, content_terms

SUBJECT_COSINE = 0.55
"""Main-model cosine at or above which two memories are about the same subject."""
LOOSE_COSINE = 0.45
"""Cosine at or above which two memories sharing a content word are about the same subject."""
CROSS_COSINE = 0.50
"""Cosine at or above which a pair in two languages is taken to state different values."""
SUBJECT_OVERLAP = 0.5
"""Without a cosine: share of the shorter text's content words the other must hold."""
CHOICE_OVERLAP = 0.5
"""Share of the shorter text's content words shared for a word swap to be a different choice."""

SWAP_WORDS = 3
"""At most this many words on each side differ for a word swap to be a different choice."""

_NUMBER = re.compile(r"\d+(?:[.:]\d+)*")
_UPDATE = re.compile(
    r"\b(?:actually|instead|now|no longer|from now on|going forward|switch(?:ed)?|"
    r"mov(?:e|ed)|migrat(?:e|ed)|replac(?:e|ed|es)|upgrad(?:e|ed)|bump(?:ed)?|"
    r"chang(?:e|ed)|rais(?:e|ed)|lower(?:ed)?|dropp(?:ed)|new rule|correction|update:)\b"
    r"|改成|改为|改用|改到|换成|不再|现在|以后|已经|升级|迁移|迁到|调整为|提高到|降低到|"
    r"更正|其实",
    re.IGNORECASE,
)
_NEGATION = re.compile(
    r"\b(?:never|not|no|don't|doesn't|isn't|aren't|can't|cannot|mustn't|shouldn't|won't|"
    r"avoid|forbid(?:den)?|disallow(?:ed)?|prohibit(?:ed)?)\b|n't\b"
    r"|不|别|禁止|勿|没有|无需",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Verdict:
    """Whether two memories need a decision: kind "conflict" or "update", or None; and why."""

    kind: str | None
    reason: str
    # an update cue, different numbers or opposite polarity: sure enough that the newer
    # memory is ranked as the correction (a swapped word or two languages are not)
    firm: bool = False

    def __bool__(self) -> bool:
        return self.kind is not None


def _numbers(text: str) -> set[str]:
    return {found.lstrip("0") or "0" for found in _NUMBER.findall(text)}


def _words(text: str) -> set[str]:
    """Content words, stemmed, without numbers (what says what a text is about)."""
    return {
        word
        for word in content_terms(text)
        if len(word) > 1 and not _NUMBER.fullmatch(word)  # "用", "v", "s" say little
    }


def _negated(text: str) -> bool:
    return _NEGATION.search(text.replace("’", "'")) is not None


def _cross_language(a: str, b: str) -> bool:
    return (cjk_count(a) > 0) != (cjk_count(b) > 0)


def detect(old: str, new: str, cosine: float | None = None) -> Verdict:
    """Does `new` conflict with or update `old`? `cosine`: the main model's cosine of their
    vectors (None: judged on words alone). See the module docstring for the rule."""
    words_old, words_new = _words(old), _words(new)
    shared = words_old & words_new
    shorter = min(len(words_old), len(words_new)) or 1
    overlap = len(shared) / shorter
    crossed = _cross_language(old, new)
    if cosine is not None:
        same = cosine >= SUBJECT_COSINE or (cosine >= LOOSE_COSINE and bool(shared))
    else:
        same = overlap >= SUBJECT_OVERLAP and len(shared) >= 2
    if not same:
        return Verdict(None, "different subjects")
    subject = ", ".join(sorted(shared)[:4]) or f"cosine {cosine:.2f}"
    differences = []
    numbers_old, numbers_new = _numbers(old), _numbers(new)
    if numbers_old and numbers_new and numbers_old != numbers_new:
        differences.append(
            f"values {'/'.join(sorted(numbers_old))} vs {'/'.join(sorted(numbers_new))}"
        )
    if _negated(old) != _negated(new):
        differences.append("one forbids or negates what the other allows")
    firm = bool(differences)
    only_old, only_new = words_old - shared, words_new - shared
    if crossed:
        if cosine is not None and cosine >= CROSS_COSINE:
            differences.append("the same subject stated in two languages")
    elif (
        only_old
        and only_new
        and overlap >= CHOICE_OVERLAP
        and max(len(only_old), len(only_new)) <= SWAP_WORDS
    ):
        differences.append(f"{'/'.join(sorted(only_old)[:2])} vs {'/'.join(sorted(only_new)[:2])}")
    cue = _UPDATE.search(new)
    if cue and (differences or only_old or only_new or crossed):
        why = "; ".join(differences) or "a changed value"
        return Verdict("update", f"same subject ({subject}); '{cue[0]}' replaces: {why}", True)
    if differences:
        return Verdict("conflict", f"same subject ({subject}); {'; '.join(differences)}", firm)
    return Verdict(None, f"same subject ({subject}); compatible")
