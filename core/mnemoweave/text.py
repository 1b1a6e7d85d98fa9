"""Text handling shared by every layer: privacy, redaction, segmentation, token estimates."""

from __future__ import annotations

import hashlib
import logging
import math
import re
import threading
import unicodedata
from pathlib import Path
from typing import Any

from .config import data_dir

# --- privacy and redaction -------------------------------------------------------------

_PRIVATE = re.compile(r"<private>.*?(?:</private>|\Z)", re.IGNORECASE | re.DOTALL)

# (label, pattern, replacement); replacements keep the non-secret part (a key's name).
_SECRETS: list[tuple[str, re.Pattern[str], str]] = [
    (
        "private-key",
        re.compile(
            r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----.*?"
            r"(?:-----END [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----|\Z)",
            re.DOTALL,
        ),
        "[REDACTED:private-key]",
    ),
    (
        "jwt",
        re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"),
        "[REDACTED:jwt]",
    ),
    ("api-key", re.compile(r"\bsk-(?:ant-|proj-|live-)?[A-Za-z0-9_\-]{16,}"), "[REDACTED:api-key]"),
    ("github-token", re.compile(r"\bgh[pousr]_[A-Za-z0-9]{30,}"), "[REDACTED:github-token]"),
    ("github-token", re.compile(r"\bgithub_pat_[A-Za-z0-9_]{22,}"), "[REDACTED:github-token]"),
    ("aws-key-id", re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"), "[REDACTED:aws-key-id]"),
    ("slack-token", re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}"), "[REDACTED:slack-token]"),
    ("google-api-key", re.compile(r"\bAIza[0-9A-Za-z_\-]{35}"), "[REDACTED:google-api-key]"),
    ("stripe-key", re.compile(r"\b[rsp]k_(?:live|test)_[0-9A-Za-z]{16,}"), "[REDACTED:stripe-key]"),
    (
        "bearer",
        re.compile(r"(?i)\b(bearer)\s+[A-Za-z0-9\-._~+/]{8,}=*"),
        r"\1 [REDACTED:bearer]",
    ),
    (
        "url-password",
        re.compile(r"\b([a-zA-Z][a-zA-Z0-9+.\-]*://[^:/\s@]+:)([^@\s/]+)(@)"),
        r"\1[REDACTED:password]\3",
    ),
    (
        "assignment",
        re.compile(
            r"(?i)\b((?:[a-z0-9]+[_-])*(?:password|passwd|pwd|secret|api[_-]?key|access[_-]?key"
            r"|secret[_-]?key|access[_-]?token|auth[_-]?token|client[_-]?secret|token))"
            r"(\s*[=:]\s*)(\"[^\"\n]*\"|'[^'\n]*'|[^\s\"',;]+)"
        ),
        r"\1\2[REDACTED:secret]",
    ),
]


def drop_private(text: str) -> str:
    """Remove `<private>...</private>` spans (an unclosed tag hides the rest of the text)."""
    return _PRIVATE.sub("", text)


def redact(text: str) -> str:
    """Replace secrets (API keys, tokens, private keys, passwords) with labelled markers."""
    for _label, pattern, replacement in _SECRETS:
        text = pattern.sub(replacement, text)
    return text


def clean(text: str) -> str:
    """What may be stored of a text: private spans dropped, secrets redacted, trimmed.

    Returns "" when nothing storable remains.
    """
    text = text.encode("utf-8", "replace").decode("utf-8")  # lone surrogates become "?"
    text = text.replace("\x00", "").replace("\r\n", "\n")
    return redact(drop_private(text)).strip()


_LOOSE_SPACE = re.compile(r"\s+(?=[^A-Za-z0-9\s])|(?<=[^A-Za-z0-9\s])\s+")


def normalise(text: str) -> str:
    """Canonical form for exact-duplicate detection.

    NFKC, casefolded, whitespace collapsed, spaces beside CJK or punctuation dropped, and
    trailing punctuation removed: "Use tabs." and "use  tabs" are the same memory.
    """
    text = " ".join(unicodedata.normalize("NFKC", text).casefold().split())
    return _LOOSE_SPACE.sub("", text).rstrip(".!?;:,。！？；：，、…")


def clip(text: str, width: int) -> str:
    """The text on one line (whitespace collapsed), cut to `width` characters with "…"."""
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def fingerprint(*parts: Any) -> str:
    """A stable hash of some values, for dedup keys."""
    digest = hashlib.sha256()
    for part in parts:
        digest.update(str(part).encode("utf-8", "surrogatepass"))
        digest.update(b"\x1f")
    return digest.hexdigest()[:32]


# --- language and tokens ---------------------------------------------------------------

_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3040-\u30ff\uac00-\ud7af]")
_WORDISH = re.compile(r"\w", re.UNICODE)


def cjk_count(text: str) -> int:
    return len(_CJK.findall(text))


def language(text: str) -> str:
    """'zh' when most letters are CJK, 'en' when none or few are, 'mixed' in between.

    Judged on the first 400 characters: enough to tell, cheap on long turns.
    """
    text = text[:400]
    letters = len(_WORDISH.findall(text))
    if not letters:
        return "en"
    share = cjk_count(text) / letters
    if share >= 0.5:
        return "zh"
    return "mixed" if share >= 0.1 else "en"


def estimate_tokens(text: str) -> int:
    """Rough token count: one per CJK character, one per four other characters."""
    cjk = cjk_count(text)
    return cjk + math.ceil((len(text) - cjk) / 4)


# --- segmentation for full-text search -------------------------------------------------


def cache_dir() -> Path:
    """Where caches (jieba's dictionary, later the models') live: inside the data dir."""
    return data_dir() / "cache"


_jieba_lock = threading.Lock()
_jieba: Any = None


def _tokenizer() -> Any:
    """jieba, initialised once per process with its cache inside the data dir."""
    global _jieba
    if _jieba is None:
        with _jieba_lock:
            if _jieba is None:
                import jieba

                jieba.setLogLevel(logging.WARNING)
                cache = cache_dir()
                cache.mkdir(parents=True, exist_ok=True)
                tokenizer = jieba.Tokenizer()
                tokenizer.tmp_dir = str(cache)
                tokenizer.initialize()
                _jieba = tokenizer
    return _jieba


def jieba_cache_file() -> Path:
    """The dictionary cache jieba was told to use (inside the data dir it started with)."""
    tokenizer = _tokenizer()
    return Path(tokenizer.tmp_dir) / (tokenizer.cache_file or "jieba.cache")


def tokens(text: str) -> list[str]:
    """Lowercased search tokens: jieba words (and their sub-words) for Chinese, words otherwise."""
    text = unicodedata.normalize("NFKC", text).lower()
    if not cjk_count(text):
        return re.findall(r"\w+", text)
    out: list[str] = []
    for token in _tokenizer().cut_for_search(text):
        out.extend(re.findall(r"\w+", token))
    return out


_stopwords: frozenset[str] | None = None


def stopwords() -> frozenset[str]:
    """Words (English and Chinese) that say nothing about a query's topic."""
    global _stopwords
    if _stopwords is None:
        from importlib.resources import files

        data = files("mnemoweave") / "data" / "stopwords.txt"
        words = (
            word
            for line in data.read_text(encoding="utf-8").splitlines()
            if not line.startswith("#")
            for word in line.split()
        )
        _stopwords = frozenset(words)
    return _stopwords


def content_words(text: str) -> list[str]:
    """The text's tokens without stopwords, in order (what says what a text is about)."""
    return [token for token in tokens(text) if token not in stopwords()]


_ENGLISH = re.compile(r"[a-z]+")
_stemmer_lock = threading.Lock()
_stemmer: Any = None


def stem(words: list[str]) -> list[str]:
    """English words reduced to their Snowball stems ("uploads" -> "upload"); Chinese words,
    numbers and identifiers with digits are kept as they are."""
    global _stemmer
    english = [i for i, word in enumerate(words) if _ENGLISH.fullmatch(word)]
    if not english:
        return words
    with _stemmer_lock:  # a Stemmer object is not safe to share between threads
        if _stemmer is None:
            import Stemmer

            _stemmer = Stemmer.Stemmer("english")
        stems = _stemmer.stemWords([words[i] for i in english])
    out = list(words)
    for i, stemmed in zip(english, stems, strict=True):
        out[i] = stemmed
    return out


def terms(text: str) -> list[str]:
    """The text's search terms: its tokens, English ones stemmed (what the FTS index holds)."""
    return stem(tokens(text))


def content_terms(text: str) -> list[str]:
    """The text's content words, stemmed: what a query asks for, as the index spells it."""
    return stem(content_words(text))


def segment(text: str) -> str:
    """Text as space-separated search terms, the form stored in the FTS index."""
    return " ".join(terms(text))
