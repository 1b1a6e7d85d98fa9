"""The vector index: ChromaDB collections derived from SQLite, rebuildable at any time.

One collection per table, embedder and project (`memories-use-m3-<project digest>`, the
project kept in the collection's metadata) in `$MNEMOWEAVE_HOME/chroma`. A search reads
only the collections of its scope (a project and the global scope), so its nearest
neighbours are all eligible: Chroma's metadata filter is slow, and nearest neighbours of a
shared collection would mostly belong to other projects. We pass our own embeddings and
store no documents: the text lives in SQLite only, so a purge there leaves nothing behind
here but a deleted vector.

A data dir from before the split (one collection per table and embedder) is split on
first use, without embedding anything again.

A collection of at most EXACT_MAX vectors is searched exactly, in memory: its vectors are
read once and kept in the process (`_exact`; the daemon, or the one command holding the
store's lock, is the collection's only writer), each write this process makes is applied
to them too (a turn stored after each prompt must not make the next prompt read the whole
collection again), and each query is one matrix product. Chroma's own query costs 2-3 ms
a call after a pause, most of it the call itself; a project's few hundred or thousand
vectors take well under one. Larger collections are searched through Chroma's HNSW index.

The index talks to Chroma's own engine (`chromadb_rust_bindings`, the layer chromadb's
`PersistentClient` wraps) with the settings that client uses, so either reads what the
other wrote. Importing the `chromadb` package takes most of a second; the engine alone
takes a few milliseconds, which is what a cold `search` waits for.
"""

from __future__ import annotations

import hashlib
import heapq
import json
import resource
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from mnemoweave.store.private import scrub_freed_memory

if TYPE_CHECKING:
    import numpy as np

_BATCH = 1000
_WHERE = ("default_tenant", "default_database")  # chromadb's defaults: one store per dir
# The HNSW graph built and searched wider than chromadb's defaults (100 / 100, 16 links):
# on the 10,000 alike memories of the sanity benchmark those put the true nearest first for
# 78-81% of its questions (it varies between builds), these for all of them, at about 1 ms
# a query and twice the build time. `ef_search` can change on an existing index.
HNSW = {"space": "cosine", "ef_construction": 400, "max_neighbors": 32, "ef_search": 400}
# what chromadb's client sends for `configuration={"hnsw": HNSW}` and no embedding function
_CONFIGURATION = json.dumps({"hnsw": HNSW, "spann": None, "embedding_function": {"type": "legacy"}})
_open: dict[Path, tuple[Any, int]] = {}  # chroma dir -> (engine, users): one per process
EXACT_MAX = 20_000  # vectors of a collection searched exactly in memory (40 MB at 512 dims)


class _Exact(NamedTuple):
    """A collection's vectors as read for exact search: ids, their rows, unit rows."""

    ids: list[str]
    rows: dict[str, int]
    matrix: Any  # np.ndarray (n, dim), L2-normalised rows: the first n rows of `room`
    room: Any  # np.ndarray (capacity, dim): a write appends here without copying the rest


# collection id -> its vectors (None: too many for exact search); and how often this
# process changed each collection (a read that overlapped a change is not kept)
_exact: dict[str, _Exact | None] = {}
_changes: dict[str, int] = {}


def _changed(collection_id: str) -> None:
    _changes[collection_id] = _changes.get(collection_id, 0) + 1
    _exact.pop(collection_id, None)


def _unit(matrix: Any) -> Any:
    """Rows scaled to length 1 (a zero row stays zero), as float32."""
    import numpy as np

    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return (matrix / np.where(norms > 0, norms, 1.0)).astype(np.float32)


def _upserted(collection_id: str, exact: _Exact | None, ids: Sequence[str], vectors: Any) -> None:
    """Keep the collection's vectors as they were before a write (`exact`, if it had them)
    with the write applied (the last of an id written twice wins): a row replaced in a copy
    (a query may hold the old one), new ones appended after the rows a query may hold. Past
    EXACT_MAX they are dropped."""
    import numpy as np

    _changed(collection_id)
    if exact is None:  # not read yet, or searched through Chroma
        return
    fresh = dict(zip(ids, _unit(np.asarray(vectors, dtype=np.float32)), strict=True))
    added = [ref for ref in fresh if ref not in exact.rows]
    count = len(exact.ids)
    if count + len(added) > EXACT_MAX or (count and exact.room.shape[1] != len(fresh[ids[0]])):
        return
    room = exact.room
    if count == 0 or count + len(added) > len(room) or len(added) < len(fresh):
        room = np.empty((max(2 * count, count + len(added)), len(fresh[ids[0]])), np.float32)
        room[:count] = exact.matrix
    for ref, vector in fresh.items():
        if ref in exact.rows:
            room[exact.rows[ref]] = vector
    for offset, ref in enumerate(added):
        room[count + offset] = fresh[ref]
    rows = exact.rows | {ref: count + offset for offset, ref in enumerate(added)}
    _exact[collection_id] = _Exact(exact.ids + added, rows, room[: count + len(added)], room)


def _acquire(path: Path) -> Any:
    """Chroma's engine for `path`, shared by every index of the dir in this process (the
    indexes of two models share one store)."""
    engine, users = _open.get(path, (None, 0))
    if engine is None:
        import chromadb_rust_bindings as rust

        scrub_freed_memory()  # its HNSW files hold uninitialised heap memory
        path.mkdir(parents=True, exist_ok=True)
        sqlite = rust.SqliteDBConfig(
            hash_type=rust.MigrationHash.MD5,
            migration_mode=rust.MigrationMode.Apply,
            url=str(path / "chroma.sqlite3"),
        )
        handles = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
        engine = rust.Bindings(
            allow_reset=False,
            sqlite_db_config=sqlite,
            persist_path=str(path),
            hnsw_cache_size=handles // 5,  # chromadb's: five files per HNSW index
        )
    _open[path] = (engine, users + 1)
    return engine


def _release(path: Path) -> None:
    engine, users = _open.pop(path, (None, 0))
    if users > 1:
        _open[path] = (engine, users - 1)


def _search_wide(engine: Any, found: Any) -> None:
    """Give an index made with chromadb's defaults the wider search (from the next time the
    store is opened)."""
    hnsw = (found.configuration or {}).get("hnsw") or {}
    if hnsw.get("ef_search", HNSW["ef_search"]) < HNSW["ef_search"]:
        wider = json.dumps({"hnsw": {"ef_search": HNSW["ef_search"]}})
        engine.update_collection(str(found.id), None, None, wider)


class _Collection(NamedTuple):
    id: str
    name: str


class VectorIndex:
    """Vectors of one embedder for the memories and turns of one data dir."""

    def __init__(self, path: Path, embedder: str) -> None:
        self.path = path
        self.embedder = embedder
        self._engine: Any = None
        self._known: dict[str, dict[str, _Collection]] = {}  # table -> project -> collection
        self._unsplit: dict[str, _Collection] = {}  # name -> a collection from before the split
        self.writes = 0  # changes made through this index: what a reader's cache is valid for

    def close(self) -> None:
        """Let go of the store (the next call opens it again)."""
        if self._engine is not None:
            self._engine = None
            self._known, self._unsplit = {}, {}
            _release(self.path)

    # --- collections -------------------------------------------------------------------------

    def _name(self, table: str, project: str) -> str:
        digest = hashlib.sha256(project.encode("utf-8")).hexdigest()[:16]
        return f"{table}-{self.embedder}-{digest}"

    def _collections(self, table: str) -> dict[str, _Collection]:
        """The table's collections by project (read from Chroma once, then kept up to date:
        the daemon, or the one command holding the store's lock, is the only writer)."""
        if self._engine is None:
            self._engine = _acquire(self.path)
            for found in self._engine.list_collections(None, None, *_WHERE):
                _search_wide(self._engine, found)
                meta = found.metadata or {}
                collection = _Collection(str(found.id), found.name)
                if meta.get("embedder") == self.embedder and "project" in meta:
                    self._known.setdefault(meta["table"], {})[meta["project"]] = collection
                else:
                    self._unsplit[found.name] = collection
        shared = self._unsplit.pop(f"{table}-{self.embedder}", None)
        if shared is not None:
            self._split(table, shared)
        return self._known.setdefault(table, {})

    def _collection(self, table: str, project: str) -> _Collection:
        """The collection of one project's rows, created on first use."""
        collections = self._collections(table)
        if project not in collections:
            meta = {"table": table, "embedder": self.embedder, "project": project}
            made = self._engine.create_collection(
                self._name(table, project), _CONFIGURATION, None, meta, True, *_WHERE
            )
            collections[project] = _Collection(str(made.id), made.name)
        return collections[project]

    def _scope(self, table: str, projects: Iterable[str] | None) -> list[_Collection]:
        """The existing collections of these projects (None: every project)."""
        collections = self._collections(table)
        if projects is None:
            return list(collections.values())
        return [collections[p] for p in dict.fromkeys(projects) if p in collections]

    def _split(self, table: str, shared: _Collection) -> None:
        """Move the vectors of a shared collection from before the split (`table-embedder`,
        each vector's project in its metadata) into the per-project collections."""
        for got in self._pages(shared, ["embeddings", "metadatas"]):
            projects = [(meta or {}).get("project", "") for meta in got.metadatas]
            self.add(table, got.ids, got.embeddings, projects)
        self._engine.delete_collection(shared.name, *_WHERE)
        _changed(shared.id)

    def _pages(self, collection: _Collection, include: list[str]) -> Iterator[Any]:
        """A collection's entries, `_BATCH` at a time (a page of ids, `include`d fields)."""
        offset = 0
        while True:
            got = self._engine.get(
                collection.id, None, None, _BATCH, offset, None, include, *_WHERE
            )
            if not got.ids:
                return
            yield got
            offset += len(got.ids)

    # --- writes ------------------------------------------------------------------------------

    def add(
        self,
        table: str,
        ids: Sequence[str],
        vectors: np.ndarray | Sequence[Any],
        projects: Sequence[str],
    ) -> None:
        """Store (or replace) each id's vector in its project's collection."""
        self.writes += 1
        by_project: dict[str, list[int]] = {}
        for position, project in enumerate(projects):
            by_project.setdefault(project, []).append(position)
        for project, positions in by_project.items():
            collection = self._collection(table, project)
            kept = _exact.get(collection.id)
            _changed(collection.id)  # a failed write leaves no kept vectors behind
            for start in range(0, len(positions), _BATCH):
                chunk = positions[start : start + _BATCH]
                self._engine.upsert(
                    collection.id,
                    [ids[i] for i in chunk],
                    [vectors[i] for i in chunk],
                    None,
                    None,
                    None,
                    *_WHERE,
                )
            _upserted(
                collection.id, kept, [ids[i] for i in positions], [vectors[i] for i in positions]
            )

    def delete(self, table: str, ids: Sequence[str]) -> None:
        """Remove these ids from every collection of the table (deletes are rare: a purge,
        a repair, a retracted team memory)."""
        self.writes += 1
        if ids:
            for collection in self._scope(table, None):
                _changed(collection.id)
                self._engine.delete(collection.id, list(ids), None, None, None, *_WHERE)
                _changed(collection.id)

    def move(self, table: str, old: str, new: str) -> None:
        """Give project `old`'s vectors to project `new` (a project renamed or merged)."""
        self.writes += 1
        collections = self._collections(table)
        source = collections.get(old)
        if source is None or old == new:
            return
        for got in self._pages(source, ["embeddings"]):
            self.add(table, got.ids, got.embeddings, [new] * len(got.ids))
        self._engine.delete_collection(source.name, *_WHERE)
        _changed(source.id)
        del collections[old]

    def clear(self, table: str) -> None:
        """Drop every collection of the table (the next write creates them empty)."""
        self.writes += 1
        for collection in self._scope(table, None):
            self._engine.delete_collection(collection.name, *_WHERE)
            _changed(collection.id)
        self._known[table] = {}

    # --- reads -------------------------------------------------------------------------------

    def query(
        self, table: str, vector: np.ndarray, n: int, projects: Iterable[str] | None = None
    ) -> list[tuple[str, float]]:
        """The nearest ids of these projects' rows (None: all) with their cosine similarity,
        best first (fewer if there are fewer)."""
        return self.neighbours(table, vector.reshape(1, -1), n, projects)[0]

    def neighbours(
        self, table: str, vectors: np.ndarray, n: int, projects: Iterable[str] | None = None
    ) -> list[list[tuple[str, float]]]:
        """`query` for many vectors at once (in batches): one list per vector, in order."""
        found: list[list[tuple[str, float]]] = [[] for _ in range(len(vectors))]
        for collection in self._scope(table, projects):
            exact = self._exact(collection)
            if exact is not None:
                _nearest(exact, vectors, n, found)
                continue
            for start in range(0, len(vectors), _BATCH):
                result = self._engine.query(
                    collection.id,
                    None,
                    list(vectors[start : start + _BATCH]),
                    n,
                    None,
                    None,
                    ["distances"],
                    *_WHERE,
                )
                for offset, (ids, distances) in enumerate(
                    zip(result.ids, result.distances, strict=True)
                ):
                    found[start + offset] += [
                        (i, 1.0 - d) for i, d in zip(ids, distances, strict=True)
                    ]
        return [heapq.nlargest(n, near, key=lambda pair: pair[1]) for near in found]

    def vectors(
        self, table: str, refs: Sequence[str], projects: Iterable[str] | None = None
    ) -> dict[str, np.ndarray]:
        """The stored vectors of these ids, looked up in these projects' collections (None:
        all); ids without one are left out."""
        import numpy as np

        found: dict[str, np.ndarray] = {}
        if not refs:
            return found
        for collection in self._scope(table, projects):
            exact = self._exact(collection)
            if exact is not None:
                found |= {r: exact.matrix[exact.rows[r]] for r in refs if r in exact.rows}
                continue
            for start in range(0, len(refs), _BATCH):
                wanted = list(refs[start : start + _BATCH])
                got = self._engine.get(
                    collection.id, wanted, None, None, 0, None, ["embeddings"], *_WHERE
                )
                for ref, vector in zip(got.ids, got.embeddings, strict=True):
                    found[ref] = np.asarray(vector, dtype=np.float32)
        return found

    def _exact(self, collection: _Collection) -> _Exact | None:
        """The collection's vectors for exact search, read once (None: too many)."""
        if collection.id in _exact:
            return _exact[collection.id]
        import numpy as np

        before = _changes.get(collection.id, 0)
        exact: _Exact | None = None
        if self._engine.count(collection.id, *_WHERE) <= EXACT_MAX:
            ids: list[str] = []
            parts = []
            for got in self._pages(collection, ["embeddings"]):
                ids += got.ids
                parts.append(np.asarray(got.embeddings, dtype=np.float32))
            matrix = _unit(np.vstack(parts)) if parts else np.zeros((0, 1), dtype=np.float32)
            exact = _Exact(ids, {ref: row for row, ref in enumerate(ids)}, matrix, matrix)
        if _changes.get(collection.id, 0) == before:  # no change overlapped the read
            _exact[collection.id] = exact
        return exact

    def ids(self, table: str) -> dict[str, str]:
        """Every id of the table with the project whose collection holds it."""
        return {
            ref: project
            for project, collection in self._collections(table).items()
            for got in self._pages(collection, [])
            for ref in got.ids
        }


def _nearest(exact: _Exact, vectors: Any, n: int, found: list[list[tuple[str, float]]]) -> None:
    """Each query vector's `n` nearest of `exact` by cosine, added to its list in `found`."""
    import numpy as np

    if not exact.ids:
        return
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    scores = exact.matrix @ (vectors / np.where(norms > 0, norms, 1.0)).T  # (rows, queries)
    keep = min(n, len(exact.ids))
    for offset in range(scores.shape[1]):
        column = scores[:, offset]
        best = np.argpartition(-column, keep - 1)[:keep]
        found[offset] += [(exact.ids[row], float(column[row])) for row in best]
