"""jieba's dictionary for Chinese segmentation, read from disk as it is needed.

jieba segments with a table of about 500,000 entries (each dictionary word with its
frequency, and every prefix of one). Its own cache loads the whole table into a dict,
which takes half a second, and a cold `search` for a short prompt needs a few hundred of
them. So the table lives in an SQLite file in the data dir's cache (built once from
jieba's dictionary, as jieba builds its own cache), and each entry is read when it is
first asked for (20 microseconds each, once). A process that asks for many (a bulk
import) reads the whole table at once, and the daemon reads it while it warms up: from
then on it is a plain dict, as fast as jieba's own.

Segmentation is the same either way: jieba only ever asks for substrings of the text.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

FILE = "jieba.sqlite"
READ_ALL_AFTER = 50_000  # entries asked for one by one before the whole table is read


class Frequencies:
    """The mapping jieba's Tokenizer reads as `FREQ` (`in`, `[]` and `get` only)."""

    def __init__(self, path: Path, every: dict[str, int] | None = None) -> None:
        """The table at `path`; `every` is all of it when the caller has it in memory."""
        self.path = path
        uri = f"{path.resolve().as_uri()}?mode=ro"
        self._db = sqlite3.connect(uri, uri=True, check_same_thread=False)
        self._lock = threading.Lock()
        self._seen: dict[str, int | None] = {}  # word -> frequency, None: not a word
        self._all = every
        self.total = int(self._db.execute("SELECT total FROM source").fetchone()[0])

    def _frequency(self, word: str) -> int | None:
        if self._all is not None:
            return self._all.get(word)
        try:
            return self._seen[word]
        except KeyError:
            pass
        if len(self._seen) >= READ_ALL_AFTER:
            return self.read_all().get(word)
        with self._lock:
            row = self._db.execute("SELECT n FROM words WHERE word = ?", (word,)).fetchone()
        self._seen[word] = found = None if row is None else int(row[0])
        return found

    def read_all(self) -> dict[str, int]:
        """Read the whole table (once): from now on every entry is in memory."""
        with self._lock:
            if self._all is None:
                self._all = dict(self._db.execute("SELECT word, n FROM words"))
                self._seen = {}  # every answer is in the table now
        return self._all

    def __contains__(self, word: object) -> bool:
        return isinstance(word, str) and self._frequency(word) is not None

    def __getitem__(self, word: str) -> int:
        found = self._frequency(word)
        if found is None:
            raise KeyError(word)
        return found

    def get(self, word: str, default: Any = None) -> Any:
        found = self._frequency(word)
        return default if found is None else found


def tokenizer(cache: Path) -> Any:
    """A jieba Tokenizer over the table in `cache` (built there first if it is missing or
    was built from another dictionary file)."""
    jieba = _import_jieba()
    jieba.setLogLevel(logging.WARNING)
    tokenizer = jieba.Tokenizer()
    with tokenizer.get_dict_file() as dictionary:
        source = Path(dictionary.name)
    path, stat = cache / FILE, source.stat()
    stamp = f"{source}:{stat.st_size}:{stat.st_mtime_ns}"
    built = _build(tokenizer, source, stamp, path) if _stamp(path) != stamp else None
    table = Frequencies(path, built)  # what was just built is not read again
    tokenizer.FREQ, tokenizer.total, tokenizer.initialized = table, table.total, True
    return tokenizer


def _import_jieba() -> Any:
    """jieba, imported without pkg_resources: jieba opens its data files through it when
    setuptools is installed (importing it takes 0.15 s), and with open() when it is not."""
    hidden = "pkg_resources" not in sys.modules
    if hidden:
        sys.modules["pkg_resources"] = None  # type: ignore[assignment]  # import fails fast
    try:
        import jieba
    finally:
        if hidden:
            del sys.modules["pkg_resources"]
    return jieba


def _stamp(path: Path) -> str | None:
    """Which dictionary file the table at `path` was built from (None: no usable table)."""
    if not path.is_file():
        return None
    with contextlib.suppress(sqlite3.Error), contextlib.closing(sqlite3.connect(path)) as db:
        return str(db.execute("SELECT stamp FROM source").fetchone()[0])
    return None


def _build(tokenizer: Any, source: Path, stamp: str, path: Path) -> dict[str, int]:
    """Write the table from dictionary file `source` (`stamp` says which) next to `path`,
    then move it in (processes that build at the same time each move a complete file in).
    Returns its entries."""
    with source.open("rb") as dictionary:
        found = tokenizer.gen_pfdict(dictionary)
    words: dict[str, int] = found[0]
    total: int = found[1]
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, staging = tempfile.mkstemp(prefix=".jieba-", suffix=".sqlite", dir=path.parent)
    os.close(fd)
    try:
        with contextlib.closing(sqlite3.connect(staging)) as db:
            db.execute(
                "CREATE TABLE words (word TEXT PRIMARY KEY, n INTEGER NOT NULL) WITHOUT ROWID"
            )
            db.executemany("INSERT INTO words VALUES (?, ?)", words.items())
            db.execute("CREATE TABLE source (stamp TEXT NOT NULL, total INTEGER NOT NULL)")
            db.execute("INSERT INTO source VALUES (?, ?)", (stamp, total))
            db.commit()
        os.replace(staging, path)
        with contextlib.suppress(FileNotFoundError):  # what jieba cached for older versions
            (path.parent / "jieba.cache").unlink()
        return words
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(staging)
