"""The vector index: ChromaDB collections derived from SQLite, rebuildable at any time.

One collection per table and embedder (`memories-use-m3`, `turns-use-m3`) in
`$MNEMOWEAVE_HOME/chroma`. We pass our own embeddings and store no documents: the text
lives in SQLite only, so a purge there leaves nothing behind here but a deleted vector.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

TABLES = ("memories", "turns")
_BATCH = 1000


class VectorIndex:
    """Vectors of one embedder for the memories and turns of one data dir."""

    def __init__(self, path: Path, embedder: str) -> None:
        self.path = path
        self.embedder = embedder
        self._client: Any = None
        self._collections: dict[str, Any] = {}

    def _collection(self, table: str) -> Any:
        if table not in self._collections:
            if self._client is None:
                import chromadb
                from chromadb.config import Settings

                self._client = chromadb.PersistentClient(
                    path=str(self.path),
                    settings=Settings(anonymized_telemetry=False, allow_reset=True),
                )
            self._collections[table] = self._client.get_or_create_collection(
                f"{table}-{self.embedder}",
                embedding_function=None,
                configuration={"hnsw": {"space": "cosine"}},
            )
        return self._collections[table]

    def add(
        self, table: str, ids: Sequence[str], vectors: np.ndarray, projects: Sequence[str]
    ) -> None:
        collection = self._collection(table)
        for start in range(0, len(ids), _BATCH):
            end = start + _BATCH
            collection.upsert(
                ids=list(ids[start:end]),
                embeddings=vectors[start:end],
                metadatas=[{"project": p} for p in projects[start:end]],
            )

    def delete(self, table: str, ids: Sequence[str]) -> None:
        if ids:
            self._collection(table).delete(ids=list(ids))

    def query(self, table: str, vector: np.ndarray, n: int) -> list[tuple[str, float]]:
        """Nearest ids with their cosine similarity, best first (fewer if the index is small)."""
        result = self._collection(table).query(
            query_embeddings=vector.reshape(1, -1), n_results=n, include=["distances"]
        )
        return [(i, 1.0 - d) for i, d in zip(result["ids"][0], result["distances"][0], strict=True)]

    def neighbours(self, table: str, vectors: np.ndarray, n: int) -> list[list[tuple[str, float]]]:
        """`query` for many vectors at once (in batches): one list per vector, in order."""
        found: list[list[tuple[str, float]]] = []
        collection = self._collection(table)
        for start in range(0, len(vectors), _BATCH):
            result = collection.query(
                query_embeddings=vectors[start : start + _BATCH], n_results=n, include=["distances"]
            )
            found += [
                [(i, 1.0 - d) for i, d in zip(ids, distances, strict=True)]
                for ids, distances in zip(result["ids"], result["distances"], strict=True)
            ]
        return found

    def vector(self, table: str, ref: str) -> np.ndarray | None:
        got = self._collection(table).get(ids=[ref], include=["embeddings"])
        return got["embeddings"][0] if len(got["ids"]) else None

    def vectors(self, table: str, refs: Sequence[str]) -> dict[str, np.ndarray]:
        """The stored vectors of these ids (ids without one are left out)."""
        found: dict[str, np.ndarray] = {}
        for start in range(0, len(refs), _BATCH):
            got = self._collection(table).get(
                ids=list(refs[start : start + _BATCH]), include=["embeddings"]
            )
            found.update(zip(got["ids"], got["embeddings"], strict=True))
        return found

    def ids(self, table: str) -> set[str]:
        return set(self._collection(table).get(include=[])["ids"])

    def clear(self, table: str) -> None:
        """Drop a table's collection (the next use creates it empty)."""
        self._collection(table)
        self._client.delete_collection(f"{table}-{self.embedder}")
        del self._collections[table]
