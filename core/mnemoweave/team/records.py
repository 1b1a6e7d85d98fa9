"""The team server's records, in Chroma: one collection `team-NAME` per team.

Only the server touches Chroma, and only for the team of the member whose token it
checked: a request names no collection, so a member cannot read or write another team's.
Each record is one shared memory: its id the content id (a hash of the normalised text,
the project key and the kind, so two members publishing one fact write one record), its
document the text, its embedding computed by the publishing member, and its metadata the
project key, kind, authors, created and updated times and a tombstone flag (a retracted
memory keeps its id, loses its text, and travels to every mirror as a removal). The
authors and the times are set here, from the member's token and the server's clock.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from typing import Any

from mnemoweave.errors import InvalidInput, MnemoweaveError
from mnemoweave.model import check_identifier, check_kind, check_time
from mnemoweave.secrets import holds_secret
from mnemoweave.team.server import content_id, pack, unpack

MAX_RECORDS = 100  # records one publish may carry
MAX_IDS = 1000  # content ids one retract may carry
MAX_PAGE = 1000  # records one read of changes may return
MAX_TEXT = 20_000  # characters of one shared memory
MAX_PROJECT = 300  # characters of a project key


class ModelClash(MnemoweaveError):
    """A member whose embedding model differs from the team's (the message says which)."""


def collection_name(team: str) -> str:
    return f"team-{team}"


class Records:
    """Every team's records on one Chroma (a directory, or a Chroma server's client)."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self._writing = threading.Lock()  # a publish or retract reads then writes a record

    def _collection(self, team: str, create: dict[str, Any] | None = None) -> Any:
        name = collection_name(team)
        if create is not None:
            return self.client.get_or_create_collection(
                name,
                metadata=create,
                configuration={"hnsw": {"space": "cosine"}},
                embedding_function=None,
            )
        try:
            return self.client.get_collection(name, embedding_function=None)
        except Exception:  # chromadb raises NotFoundError (or ValueError in older versions)
            return None

    def info(self, team: str) -> dict[str, Any]:
        found = self._collection(team)
        meta = (found.metadata or {}) if found is not None else {}
        return {
            "model": meta.get("model"),
            "dim": meta.get("dim"),
            "records": int(found.count()) if found is not None else 0,
        }

    def join(self, team: str, model: str, dim: int) -> dict[str, Any]:
        """The team's collection, made for this model if it is the first; a member with
        another model is refused in one line."""
        found = self._collection(team, create={"model": model, "dim": dim})
        theirs = (found.metadata or {}).get("model")
        if theirs != model:
            raise ModelClash(
                f"team {team} uses the embedding model {theirs}, this machine {model}:"
                f" set embedder = {theirs!r} to join it"
            )
        return self.info(team)

    def _joined(self, team: str, model: str) -> Any:
        found = self._collection(team)
        if found is None or (found.metadata or {}).get("model") != model:
            raise ModelClash(f"join team {team} with the model {model} first")
        return found

    def publish(
        self, team: str, member: str, model: str, records: Sequence[dict[str, Any]]
    ) -> list[dict[str, Any]]:
        """Write these memories with `member` among their authors; each one's content id
        and updated time."""
        found = self._joined(team, model)
        dim = int((found.metadata or {}).get("dim") or 0)
        checked = [_checked(r, dim) for r in records]
        now = time.time()
        with self._writing:
            cids = [content_id(r["text"], r["project"], r["kind"]) for r in checked]
            there = _live(found, cids)
            metadatas = []
            for cid, r in zip(cids, checked, strict=True):
                old = there.get(cid)
                authors = sorted({*(authors_of(old) if old else ()), member})
                created = min(float(old["created"]), r["created"]) if old else r["created"]
                metadatas.append(metadata(r["project"], r["kind"], authors, created, now, False))
            if cids:
                found.upsert(
                    ids=cids,
                    embeddings=[r["vector"] for r in checked],
                    documents=[r["text"] for r in checked],
                    metadatas=metadatas,
                )
        return [{"cid": cid, "updated": now} for cid in cids]

    def retract(self, team: str, member: str, model: str, cids: Sequence[str]) -> int:
        """Take `member` off these records; a record left without authors is buried."""
        found = self._joined(team, model)
        dim = int((found.metadata or {}).get("dim") or 1)
        now = time.time()
        with self._writing:
            there = _live(found, list(cids))
            kept: dict[str, dict[str, Any]] = {}
            buried: dict[str, dict[str, Any]] = {}
            for cid, meta in there.items():
                authors = authors_of(meta)
                if member not in authors:
                    continue
                left = [a for a in authors if a != member]
                again = metadata(
                    meta["project"], meta["kind"], left, meta["created"], now, not left
                )
                (kept if left else buried)[cid] = again
            if kept:
                found.update(ids=list(kept), metadatas=list(kept.values()))
            if buried:
                blank = [1.0] + [0.0] * (dim - 1)
                found.upsert(
                    ids=list(buried),
                    embeddings=[blank] * len(buried),
                    documents=[""] * len(buried),
                    metadatas=list(buried.values()),
                )
        return len(kept) + len(buried)

    def changes(self, team: str, since: float, limit: int, offset: int) -> list[dict[str, Any]]:
        """A page of the team's records updated after `since` (tombstones included)."""
        found = self._collection(team)
        if found is None:
            return []
        got = found.get(
            where={"updated": {"$gt": since}},
            limit=limit,
            offset=offset,
            include=["metadatas", "documents", "embeddings"],
        )
        return [
            {
                "cid": cid,
                "project": meta.get("project", ""),
                "kind": meta.get("kind", "fact"),
                "text": text or "",
                "authors": authors_of(meta),
                "created": float(meta.get("created", 0.0)),
                "updated": float(meta.get("updated", 0.0)),
                "tombstone": bool(meta.get("tombstone")),
                "vector": None if meta.get("tombstone") else pack(vector),
            }
            for cid, meta, text, vector in zip(
                got["ids"], got["metadatas"], got["documents"], got["embeddings"], strict=True
            )
        ]


def _live(found: Any, cids: list[str]) -> dict[str, dict[str, Any]]:
    """The metadata of those of these records that are not tombstones."""
    if not cids:
        return {}
    got = found.get(ids=cids, include=["metadatas"])
    return {
        cid: meta
        for cid, meta in zip(got["ids"], got["metadatas"], strict=True)
        if not meta.get("tombstone")
    }


def authors_of(meta: dict[str, Any]) -> list[str]:
    """The authors a record's metadata holds (`metadata` joins them with ", ")."""
    return [a for a in str(meta.get("authors", "")).split(", ") if a]


def metadata(
    project: str, kind: str, authors: Sequence[str], created: float, updated: float, gone: bool
) -> dict[str, Any]:
    return {
        "project": project,
        "kind": kind,
        "authors": ", ".join(authors),
        "created": float(created),
        "updated": float(updated),
        "tombstone": gone,
    }


def _checked(record: Any, dim: int) -> dict[str, Any]:
    """One record of a publish, every field checked (the message names what is wrong)."""
    if not isinstance(record, dict):
        raise InvalidInput("each record is an object")
    project, kind, text = record.get("project"), record.get("kind"), record.get("text")
    created, vector = record.get("created"), record.get("vector")
    if not isinstance(project, str) or not 0 < len(project) <= MAX_PROJECT:
        raise InvalidInput(
            f"a record's 'project' must be a project key of 1-{MAX_PROJECT} characters"
        )
    check_identifier(project, "project")
    if not isinstance(kind, str):
        raise InvalidInput("a record's 'kind' must be a string")
    check_kind(kind)
    if not isinstance(text, str) or not text.strip() or len(text) > MAX_TEXT:
        raise InvalidInput(f"a record's 'text' must be 1-{MAX_TEXT} characters")
    if holds_secret(text):
        raise InvalidInput("a record's 'text' holds what looks like a secret")
    created = float(check_time(created, "created"))
    return {
        "project": project,
        "kind": kind,
        "text": text,
        "created": min(created, time.time()),
        "vector": unpack(vector, dim),
    }
