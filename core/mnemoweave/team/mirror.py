"""The local mirror of the team's memories: pulled incrementally, read without a network.

The pull asks the server for the team's records updated after the cursor, a page at a
time, every project of the team alike (so a member's first session in a repository finds
that project's shared memories, whatever its own store holds), and applies each page in
one transaction: a record lands in `team_mirror` (text, authors, times, full-text index)
and its embedding in the local vector collection `team-MODEL`; a tombstone removes both.
The cursor is the newest `updated` seen; each pull starts OVERLAP seconds before it, so a
member whose clock runs a little behind is not missed (a record pulled again unchanged is
skipped; a clock more than OVERLAP behind can miss one).
"""

from __future__ import annotations

from typing import Any

from mnemoweave.store import team as team_table
from mnemoweave.store.db import transaction
from mnemoweave.team.outbox import Lock
from mnemoweave.team.server import TeamServer

PAGE = 1000  # records per request
OVERLAP = 120.0  # seconds each pull looks back before its cursor (members' clock skew)
TABLE = "team"  # the local vector collection: team-MODEL beside memories-MODEL


def pull(engine: Any, server: TeamServer, lock: Lock) -> dict[str, int]:
    """Bring the mirror up to date with the server; counts of records mirrored and removed."""
    with lock():
        cursor = float(team_table.state(engine.db).get("cursor", "0"))
    mirrored = removed = 0
    newest, offset = cursor, 0
    while True:
        page = server.changed(max(0.0, cursor - OVERLAP), PAGE, offset)
        with lock():
            known = team_table.mirror_rows(engine.db, [c.record.cid for c in page])
            # what the look back brings again, as it is mirrored already, is left alone
            gone = [c.record.cid for c in page if c.tombstone and c.record.cid in known]
            live = [
                c
                for c in page
                if not c.tombstone
                and (
                    c.record.cid not in known or known[c.record.cid]["updated"] != c.record.updated
                )
            ]
            with transaction(engine.db) as db:
                team_table.remove_mirror(db, gone)
                team_table.upsert_mirror(db, [c.record for c in live])
            if engine.index is not None:
                engine.index.delete(TABLE, gone)
                if live:
                    import numpy as np

                    vectors = np.array([c.vector for c in live], dtype=np.float32)
                    engine.index.add(
                        TABLE,
                        [c.record.cid for c in live],
                        vectors,
                        [c.record.project for c in live],
                    )
        mirrored, removed = mirrored + len(live), removed + len(gone)
        newest = max([newest, *(c.record.updated for c in page)])
        offset += len(page)
        if len(page) < PAGE:
            break
    with lock(), transaction(engine.db) as db:
        team_table.set_state(db, {"cursor": repr(newest)})
    return {"mirrored": mirrored, "removed": removed}
