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
"""

from __future__ import annotations

import hashlib
import heapq
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

_BATCH = 1000


class VectorIndex:
    """Vectors of one embedder for the memories and turns of one data dir."""

    def __init__(self, path: Path, embedder: str) -> None:
        self.path = path
        self.embedder = embedder
        self._client: Any = None
        self._known: dict[str, dict[str, Any]] = {}  # table -> project -> collection
        self._unsplit: dict[str, Any] = {}  # name -> a collection from before the split

    # --- collections -------------------------------------------------------------------------

    def _name(self, table: str, project: str) -> str:
        digest = hashlib.sha256(project.encode("utf-8")).hexdigest()[:16]
        return f"{table}-{self.embedder}-{digest}"

    def _collections(self, table: str) -> dict[str, Any]:
        """The table's collections by project (read from Chroma once, then kept up to date:
        the daemon, or the one command holding the store's lock, is the only writer)."""
        if self._client is None:
            import chromadb
            from chromadb.config import Settings

            self._client = chromadb.PersistentClient(
                path=str(self.path),
                settings=Settings(anonymized_telemetry=False, allow_reset=True),
            )
            for collection in self._client.list_collections():
                meta = collection.metadata or {}
                if meta.get("embedder") == self.embedder and "project" in meta:
                    self._known.setdefault(meta["table"], {})[meta["project"]] = collection
                else:
                    self._unsplit[collection.name] = collection
        shared = self._unsplit.pop(f"{table}-{self.embedder}", None)
        if shared is not None:
            self._split(table, shared)
        return self._known.setdefault(table, {})

    def _collection(self, table: str, project: str) -> Any:
        """The collection of one project's rows, created on first use."""
        collections = self._collections(table)
        if project not in collections:
            collections[project] = self._client.get_or_create_collection(
                self._name(table, project),
                embedding_function=None,
                metadata={"table": table, "embedder": self.embedder, "project": project},
                configuration={"hnsw": {"space": "cosine"}},
            )
        return collections[project]

    def _scope(self, table: str, projects: Iterable[str] | None) -> list[Any]:
        """The existing collections of these projects (None: every project)."""
        collections = self._collections(table)
        if projects is None:
            return list(collections.values())
        return [collections[p] for p in dict.fromkeys(projects) if p in collections]

    def _split(self, table: str, shared: Any) -> None:
        """Move the vectors of a shared collection from before the split (`table-embedder`,
        each vector's project in its metadata) into the per-project collections."""
        for got in _pages(shared, ["embeddings", "metadatas"]):
            projects = [(meta or {}).get("project", "") for meta in got["metadatas"]]
            self.add(table, got["ids"], got["embeddings"], projects)
        self._client.delete_collection(shared.name)

    # --- writes ------------------------------------------------------------------------------

    def add(
        self, table: str, ids: Sequence[str], vectors: np.ndarray, projects: Sequence[str]
    ) -> None:
        """Store (or replace) each id's vector in its project's collection."""
        by_project: dict[str, list[int]] = {}
        for position, project in enumerate(projects):
            by_project.setdefault(project, []).append(position)
        for project, positions in by_project.items():
            collection = self._collection(table, project)
            for start in range(0, len(positions), _BATCH):
                chunk = positions[start : start + _BATCH]
                collection.upsert(
                    ids=[ids[i] for i in chunk], embeddings=[vectors[i] for i in chunk]
                )

    def delete(self, table: str, ids: Sequence[str]) -> None:
        """Remove these ids from every collection of the table (deletes are rare: a purge,
        a repair, a retracted team memory)."""
        if ids:
            for collection in self._scope(table, None):
                collection.delete(ids=list(ids))

    def move(self, table: str, old: str, new: str) -> None:
        """Give project `old`'s vectors to project `new` (a project renamed or merged)."""
        collections = self._collections(table)
        source = collections.get(old)
        if source is None or old == new:
            return
        for got in _pages(source, ["embeddings"]):
            self.add(table, got["ids"], got["embeddings"], [new] * len(got["ids"]))
        self._client.delete_collection(source.name)
        del collections[old]

    def clear(self, table: str) -> None:
        """Drop every collection of the table (the next write creates them empty)."""
        for collection in self._scope(table, None):
            self._client.delete_collection(collection.name)
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
            for start in range(0, len(vectors), _BATCH):
                result = collection.query(
                    query_embeddings=vectors[start : start + _BATCH],
                    n_results=n,
                    include=["distances"],
                )
                for offset, (ids, distances) in enumerate(
                    zip(result["ids"], result["distances"], strict=True)
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
        found: dict[str, np.ndarray] = {}
        if not refs:
            return found
        for collection in self._scope(table, projects):
            for start in range(0, len(refs), _BATCH):
                got = collection.get(ids=list(refs[start : start + _BATCH]), include=["embeddings"])
                found.update(zip(got["ids"], got["embeddings"], strict=True))
        return found

    def ids(self, table: str) -> dict[str, str]:
        """Every id of the table with the project whose collection holds it."""
        return {
            ref: project
            for project, collection in self._collections(table).items()
            for ref in collection.get(include=[])["ids"]
        }


def _pages(collection: Any, include: list[str]) -> Iterator[Any]:
    """A collection's entries, `_BATCH` at a time (a page of ids, `include`d fields)."""
    offset = 0
    while (got := collection.get(include=include, limit=_BATCH, offset=offset))["ids"]:
        yield got
        offset += len(got["ids"])
