"""Text handling shared by every layer: privacy (what may be stored, with `secrets`),
segmentation, token estimates."""

from __future__ import annotations

import contextlib
import functools
import hashlib
import math
import re
import threading
import unicodedata
from pathlib import Path
from typing import Any

from mnemoweave.config import data_dir, shared_cache
from mnemoweave.secrets import redact

# --- privacy: what may be stored ----------------------------------------------------------

_PRIVATE = re.compile(r"<\s*private\s*>.*?(?:<\s*/\s*private\s*>|\Z)", re.IGNORECASE | re.DOTALL)


def drop_private(text: str) -> str:
    """Remove `<private>...</private>` spans (an unclosed tag hides the rest of the text)."""
    return _PRIVATE.sub("", text)


@functools.lru_cache(maxsize=16)
def clean(text: str) -> str:
    """What may be stored of a text: private spans dropped, secrets redacted, trimmed.

    Returns "" when nothing storable remains. Cached: a turn's key and its stored text are
    made from the same text one after the other.
    """
    text = text.encode("utf-8", "replace").decode("utf-8")  # lone surrogates become "?"
    text = text.replace("\x00", "").replace("\r\n", "\n")
    return redact(drop_private(text)).strip()


MAX_TEXT = 200_000  # characters stored of one turn or memory; the rest is cut, with a marker
SLACK = 4_096  # characters cleaned beyond a cut and then not kept
SHORT_TEXT = 4_000  # characters: the latest texts this short keep their cleaned form and tokens
_CUT = re.compile(r"\n\[truncated: kept (\d+) of (\d+) characters\]\Z")


def _cut_before(text: str) -> re.Match[str] | None:
    """The marker `bounded` put at the end of a text (stored, spooled or exported)."""
    found = _CUT.search(text, max(0, len(text) - 80))
    return found if found is not None and found.start() <= MAX_TEXT else None


def kept(text: str) -> str:
    """What is kept of a text, and what a turn's key is made from: the cleaned text, at most
    MAX_TEXT characters. Of a longer text only MAX_TEXT + SLACK characters are cleaned, and
    the last SLACK of them are not kept: a secret or private span at the cut is recognised
    whole, or not kept at all. A huge text costs what a long one does."""
    return _keep(text)[0]


def bounded(text: str) -> str:
    """What is stored of a text: `kept(text)`, with a marker when some was cut, saying how
    much (never silently). A text this returned comes back unchanged."""
    body, whole = _keep(text)
    if whole:
        return body
    cut = _cut_before(text)
    given = int(cut[2]) if cut is not None else len(text)
    return f"{body}\n[truncated: kept {len(body)} of {given} characters]" if body else ""


def _keep(text: str) -> tuple[str, bool]:
    """What is kept of a text, and whether that is all of it. A turn's key and its stored
    text are both made from this: the latest short texts' answers are remembered, so a
    prompt is cleaned once."""
    if len(text) <= SHORT_TEXT:
        return _remembered_keep(text)
    return _cleaned_part(text)


@functools.lru_cache(maxsize=64)
def _remembered_keep(text: str) -> tuple[str, bool]:
    return _cleaned_part(text)


def _cleaned_part(text: str) -> tuple[str, bool]:
    cut = _cut_before(text)
    if cut is not None:
        text = text[: cut.start()]
    if len(text) <= MAX_TEXT + SLACK:
        cleaned = clean(text)
        return cleaned[:MAX_TEXT], cut is None and len(cleaned) <= MAX_TEXT
    cleaned = clean(text[: MAX_TEXT + SLACK])
    return cleaned[: max(0, min(MAX_TEXT, len(cleaned) - SLACK))], False


QUERY_EDGE = 2_048  # characters a weave or search query keeps of each end of a longer text


def query_part(query: str | None) -> str:
    """What a query is matched by: the whole of a short one, the first and last QUERY_EDGE
    characters of a longer one (a pasted 10 MB log costs what a paragraph does: embedding,
    segmenting and matching all grow with the text)."""
    query = query or ""
    if len(query) <= 2 * QUERY_EDGE:
        return query
    return f"{query[:QUERY_EDGE]}\n{query[-QUERY_EDGE:]}"


def clean_all(value: Any) -> Any:
    """Every string of a JSON value as it would be stored (what a spooled payload keeps):
    cleaned, at most MAX_TEXT characters; the rest as is."""
    if isinstance(value, str):
        return bounded(value)
    if isinstance(value, list):
        return [clean_all(item) for item in value]
    if isinstance(value, dict):
        return {key: clean_all(item) for key, item in value.items()}
    return value


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
    """Where the data dir's caches (onnxruntime's files, downloads) live: inside it."""
    return data_dir() / "cache"


_jieba_lock = threading.Lock()
_jieba: Any = None


def _tokenizer() -> Any:
    """jieba, set up once per process over its dictionary table in the cache every data dir
    shares (see store/dictionary.py; a data dir of an older version kept its own in its
    cache: it is removed)."""
    global _jieba
    if _jieba is None:
        with _jieba_lock:
            if _jieba is None:
                from mnemoweave.store.dictionary import FILE, tokenizer

                _jieba = tokenizer(shared_cache())
                with contextlib.suppress(OSError):
                    (cache_dir() / FILE).unlink()
    return _jieba


def read_dictionary() -> None:
    """Read jieba's whole dictionary now (a long-lived process segments every turn)."""
    _tokenizer().FREQ.read_all()


def jieba_dictionary() -> Path:
    """The dictionary table jieba reads (in the shared cache it started with); when that
    table is gone (removed under a live process), jieba is set up again over the current
    shared cache."""
    global _jieba
    if not Path(_tokenizer().FREQ.path).is_file():
        with _jieba_lock:
            _jieba = None
    return Path(_tokenizer().FREQ.path)


def tokens(text: str) -> list[str]:
    """Lowercased search tokens: jieba words (and their sub-words) for Chinese, words otherwise.

    A prompt is segmented by its search, its relevance gate and its store alike: the latest
    short texts' tokens are remembered, so each is segmented once."""
    if len(text) <= SHORT_TEXT:
        return list(_remembered_tokens(text))
    return _tokens(text)


@functools.lru_cache(maxsize=1024)
def _remembered_tokens(text: str) -> tuple[str, ...]:
    return tuple(_tokens(text))


def _tokens(text: str) -> list[str]:
    text = unicodedata.normalize("NFKC", text).lower()
    if not cjk_count(text):
        return re.findall(r"\w+", text)
    out: list[str] = []
    for token in _tokenizer().cut_for_search(text):
        out.extend(re.findall(r"\w+", token))
    return out


BARE = 3  # words: a reply this short says nothing without its question ("Done.", "好的")


def bare(text: str) -> bool:
    """A text too short to say anything by itself ("Done.", "OK", "好的。", "thanks")."""
    return len(tokens(text)) <= BARE


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


@functools.cache
def _glossary() -> dict[str, tuple[str, ...]]:
    """Index term -> its equivalents in the other language (data/glossary.txt: common
    software words in English and Chinese), as the index spells them."""
    from importlib.resources import files

    data = files("mnemoweave") / "data" / "glossary.txt"
    pairs: dict[str, set[str]] = {}
    for line in data.read_text(encoding="utf-8").splitlines():
        english, found, chinese = line.partition(" = ")
        spelled = terms(english) if found and not line.startswith("#") else []
        if len(spelled) != 1:  # a comment, or a hyphenated word the index splits
            continue
        for word in chinese.split(", "):
            pairs.setdefault(spelled[0], set()).add(word)
            pairs.setdefault(word, set()).add(spelled[0])
    return {term: tuple(sorted(other)) for term, other in pairs.items()}


def translations(term: str) -> tuple[str, ...]:
    """The index terms that say `term` in the other language ("deploy" -> "部署", "上线", ...;
    "超时" -> "timeout"), from a glossary of common software words."""
    return _glossary().get(term, ())


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


def precise_words(text: str) -> list[str]:
    """The text's content words as whole words (jieba's precise mode for Chinese, not the
    search mode's overlapping pieces), lowercased, stopwords left out: what a prompt says."""
    text = unicodedata.normalize("NFKC", text).lower()
    if not cjk_count(text):
        words = re.findall(r"\w+", text)
    else:
        words = [w for token in _tokenizer().lcut(text) for w in re.findall(r"\w+", token)]
    return [word for word in words if word not in stopwords()]


def terms(text: str) -> list[str]:
    """The text's search terms: its tokens, English ones stemmed (what the FTS index holds)."""
    return stem(tokens(text))


def content_terms(text: str) -> list[str]:
    """The text's content words, stemmed: what a query asks for, as the index spells it."""
    return stem(content_words(text))


def segment(text: str) -> str:
    """Text as space-separated search terms, the form stored in the FTS index."""
    return " ".join(terms(text))


def same_words_reordered(a: str, b: str) -> bool:
    """The same content words in another order: "pytest over unittest" vs "unittest over
    pytest". Embeddings see these as near-identical; they usually say the opposite."""
    words_a, words_b = content_words(a), content_words(b)
    return sorted(words_a) == sorted(words_b) and words_a != words_b


def is_near_duplicate(a: str, b: str, cosine: float, threshold: float) -> bool:
    """Close enough in meaning to merge, and not a reversal of the same words."""
    return cosine >= threshold and not same_words_reordered(a, b)
