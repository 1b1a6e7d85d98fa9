"""Publishing: what this member owes the team's server, and sending it.

What should be on the server is every active memory of a project (never a global one)
that was accepted with `--share` or belongs to a project in `team_projects`; raw turns,
cards, sessions and global memories are never read here. The outbox is the difference
between that and `team_published` (what was sent): a memory new or changed since is
(re)published, one forgotten, superseded, purged or moved out of scope is retracted. So
nothing queued can be lost (the store is the queue) and a batch sent twice (the server died
before the answer) writes the same content ids again: nothing is duplicated.

The server adds this member to a published record's authors (two members' same fact: one
record, both authors) and takes them off on a retract; the last author's retract leaves a
tombstone. Authors are the server's to set: nothing here names one.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any

from mnemoweave.store import team as team_table
from mnemoweave.store.db import transaction
from mnemoweave.store.team import TeamRecord
from mnemoweave.team.server import TeamError, TeamServer, content_id

BATCH = 50  # records per request to the server
Lock = Callable[[], AbstractContextManager[Any]]


@dataclass
class Outbox:
    """What to send: memories to publish (with their vectors) and content ids to retract."""

    publish: list[tuple[int, TeamRecord, Any]] = field(default_factory=list)
    retract: list[tuple[int | None, str]] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.publish) + len(self.retract)


def plan(engine: Any, vectors: bool = True) -> Outbox:
    """The outbox now (the caller holds the engine); `vectors` False: counting only."""
    db = engine.db
    rows = team_table.shareable(db, engine.config.team_projects)
    sent = team_table.published(db)
    out = Outbox()
    wanted: set[int] = set()
    for row in rows:
        wanted.add(row["id"])
        cid = content_id(row["body"], row["project"], row["kind"])
        before = sent.get(row["id"])
        if before == (cid, row["updated"]):
            continue
        if before is not None and before[0] != cid:
            out.retract.append((None, before[0]))  # edited: the old text leaves the team
        record = TeamRecord(
            cid, row["project"], row["kind"], row["body"], (), row["created"], row["updated"]
        )
        out.publish.append((row["id"], record, None))
    out.retract += [(gone, was[0]) for gone, was in sent.items() if gone not in wanted]
    if vectors and out.publish:
        if engine.index is None:
            raise TeamError("sharing needs the embedding model: run `mnemoweave model build`")
        found = engine.index.vectors("memories", [f"m_{item[0]}" for item in out.publish])
        out.publish = [
            (item[0], item[1], found[f"m_{item[0]}"])
            for item in out.publish
            if f"m_{item[0]}" in found
        ]
    return out


def push(engine: Any, server: TeamServer, lock: Lock) -> dict[str, int]:
    """Send the outbox in batches, recording each batch once the server has it."""
    with lock():
        out = plan(engine)
    retracted = published = 0
    for start in range(0, len(out.retract), BATCH):
        part = out.retract[start : start + BATCH]
        retracted += server.retract([cid for _, cid in part])
        with lock(), transaction(engine.db) as db:
            team_table.unpublish(db, [mid for mid, _ in part if mid is not None])
    for start in range(0, len(out.publish), BATCH):
        batch = out.publish[start : start + BATCH]
        cids = server.publish([r for _, r, _ in batch], [v for _, _, v in batch])
        with lock(), transaction(engine.db) as db:
            team_table.record_published(
                db, [(m, cid, r.updated) for (m, r, _), cid in zip(batch, cids, strict=True)]
            )
        published += len(batch)
    return {"published": published, "retracted": retracted}
