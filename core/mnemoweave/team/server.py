"""The team's Chroma server, as this member sees it: one collection `team-NAME`.

The collection's metadata records the embedding model (and its dimension); a member whose
model differs is refused in one line. Each record is one shared memory: its id is the
content id (a hash of the normalised text, the project key and the kind, so two members
publishing the same fact write one record), its document the text, its embedding computed
by the publishing member, and its metadata the project key, kind, authors, created and
updated times and a tombstone flag (a retracted memory keeps its id, loses its text, and
travels to every mirror as a removal).

The token goes in the `Authorization: Bearer` header of requests to `team_url` only
(chromadb's TokenAuthClientProvider), every request bounded by TIMEOUT.
"""

from __future__ import annotations

import hashlib
import ipaddress
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from ..errors import InvalidInput, MnemoweaveError
from ..store.team import TeamRecord
from ..text import normalise

TIMEOUT = 30.0  # seconds one request to the team's server may take
TOKEN_PROVIDER = "chromadb.auth.token_authn.TokenAuthClientProvider"
NAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]{0,58}[A-Za-z0-9])?")


class TeamError(MnemoweaveError):
    """The team's server refused or could not be reached (the message says which)."""


def content_id(text: str, project: str, kind: str) -> str:
    """The stable id of a shared memory: the same fact in the same project is one record."""
    key = "\0".join((normalise(text), project, kind))
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:32]


def loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_url(url: str, allow_insecure: bool) -> tuple[str, int, bool]:
    """(host, port, tls) of a team_url; plain http to another machine needs allow_insecure."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InvalidInput(f"team_url {url!r}: use https://HOST[:PORT] (or http:// on loopback)")
    tls = parts.scheme == "https"
    if not tls and not loopback(parts.hostname) and not allow_insecure:
        raise InvalidInput(
            f"team_url {url} is plain http to another machine: the token would travel in"
            " clear; use https, or --allow-insecure (team_allow_insecure = true)"
        )
    return parts.hostname, parts.port or (443 if tls else 80), tls


def check_name(name: str) -> str:
    if not NAME.fullmatch(name):
        raise InvalidInput(
            f"team_name {name!r}: use 1-60 letters, digits, '.', '_' or '-' (starting and"
            " ending with a letter or digit)"
        )
    return name


def why(exc: Exception) -> str:
    """One line for a failed request: a refused token, an unreachable server, or else."""
    text = " ".join(str(exc).split())
    if isinstance(exc, TeamError):
        return text
    if "401" in text or "403" in text or "nauthori" in text or "orbidden" in text:
        return "the server refused the token (team_token): " + text[:120]
    if "Connect" in type(exc).__name__ or "onnect" in text or "Timeout" in type(exc).__name__:
        return f"the server cannot be reached ({type(exc).__name__}: {text[:120]})"
    return f"{type(exc).__name__}: {text[:160]}"


@dataclass(frozen=True)
class Change:
    """A record read from the server: a memory to mirror, or a tombstone."""

    record: TeamRecord
    tombstone: bool
    vector: Any  # the embedding (None for a tombstone)


class TeamServer:
    """The collection `team-NAME` on the server at `url`, for one embedding model."""

    def __init__(
        self, url: str, token: str, name: str, model: str, dim: int, allow_insecure: bool
    ) -> None:
        self.url = url
        self.host, self.port, self.tls = check_url(url, allow_insecure)
        self.name = f"team-{check_name(name)}"
        self.token, self.model, self.dim = token, model, dim
        self._collection: Any = None

    @property
    def collection(self) -> Any:
        return self.ready()._collection

    def ready(self) -> TeamServer:
        """Connected, and the collection's model checked (before anything is sent)."""
        if self._collection is None:
            self._collection = self._connect()
        return self

    def _connect(self) -> Any:
        import chromadb
        import httpx
        from chromadb.config import Settings

        settings = Settings(anonymized_telemetry=False)
        if self.token:
            settings = Settings(
                anonymized_telemetry=False,
                chroma_client_auth_provider=TOKEN_PROVIDER,
                chroma_client_auth_credentials=self.token,
            )
        client = chromadb.HttpClient(self.host, self.port, self.tls, settings=settings)
        # chromadb's HTTP session waits forever by default: every request here is bounded
        client._server._session.timeout = httpx.Timeout(TIMEOUT)  # type: ignore[attr-defined]
        collection = client.get_or_create_collection(
            self.name,
            metadata={"model": self.model, "dim": self.dim},
            configuration={"hnsw": {"space": "cosine"}},
            embedding_function=None,
        )
        theirs = (collection.metadata or {}).get("model")
        if theirs != self.model:
            raise TeamError(
                f"team {self.name[5:]} uses the embedding model {theirs}, this machine"
                f" {self.model}: set embedder = {theirs!r} to join it"
            )
        return collection

    def fetch(self, cids: Sequence[str]) -> dict[str, TeamRecord]:
        """The records with these content ids that the server holds (tombstones left out)."""
        if not cids:
            return {}
        got = self.collection.get(ids=list(cids), include=["metadatas", "documents"])
        found = {}
        for cid, meta, text in zip(got["ids"], got["metadatas"], got["documents"], strict=True):
            if not meta.get("tombstone"):
                found[cid] = _record(cid, meta, text or "")
        return found

    def put(self, records: Sequence[TeamRecord], vectors: Sequence[Any]) -> None:
        """Write records (by content id: a second write of one replaces it)."""
        if not records:
            return
        self.collection.upsert(
            ids=[r.cid for r in records],
            embeddings=[list(map(float, v)) for v in vectors],
            documents=[r.text for r in records],
            metadatas=[_metadata(r, tombstone=False) for r in records],
        )

    def relabel(self, records: Sequence[TeamRecord]) -> None:
        """New authors and times for records whose text and embedding stay."""
        if records:
            self.collection.update(
                ids=[r.cid for r in records],
                metadatas=[_metadata(r, tombstone=False) for r in records],
            )

    def bury(self, records: Sequence[TeamRecord]) -> None:
        """Tombstones: the records keep their ids and lose their text and embedding."""
        if not records:
            return
        blank = [1.0] + [0.0] * (self.dim - 1)
        self.collection.upsert(
            ids=[r.cid for r in records],
            embeddings=[blank] * len(records),
            documents=[""] * len(records),
            metadatas=[_metadata(r, tombstone=True) for r in records],
        )

    def changed(self, project: str, since: float, limit: int, offset: int) -> list[Change]:
        """A page of a project's records updated after `since` (tombstones included)."""
        got = self.collection.get(
            where={"$and": [{"project": project}, {"updated": {"$gt": since}}]},
            limit=limit,
            offset=offset,
            include=["metadatas", "documents", "embeddings"],
        )
        return [
            Change(_record(cid, meta, text or ""), bool(meta.get("tombstone")), vector)
            for cid, meta, text, vector in zip(
                got["ids"], got["metadatas"], got["documents"], got["embeddings"], strict=True
            )
        ]

    def count(self) -> int:
        return int(self.collection.count())


def _metadata(r: TeamRecord, tombstone: bool) -> dict[str, Any]:
    return {
        "project": r.project,
        "kind": r.kind,
        "authors": ", ".join(r.authors),
        "created": r.created,
        "updated": r.updated,
        "tombstone": tombstone,
    }


def _record(cid: str, meta: dict[str, Any], text: str) -> TeamRecord:
    authors = tuple(a for a in str(meta.get("authors", "")).split(", ") if a)
    return TeamRecord(
        cid,
        str(meta.get("project", "")),
        str(meta.get("kind", "fact")),
        text,
        authors,
        float(meta.get("created", 0.0)),
        float(meta.get("updated", 0.0)),
    )
