"""The spool: payloads a hook could not deliver in time (or that the daemon could not store
after answering), kept as files under `spool/` (0600, cleaned as stored text is) and
stored, never woven, when the daemon starts, right after a hook it serves finds the spool
non-empty (off the hook's own path: the transcript follower's worker does it), and every
few seconds while it is quiet. Turn keys make a payload stored once, however often it is
replayed. `spool/.reserve` (spooled.RESERVE_BYTES) is room kept for a full disk: a hook that
cannot spool frees it and spools, and the daemon makes it again when there is space."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any

from mnemoweave.errors import MnemoweaveError
from mnemoweave.hook import keep_reserve
from mnemoweave.hosts import adapters
from mnemoweave.store.damage import StoreDamaged
from mnemoweave.store.spooled import SPOOL, spooled_names

log = logging.getLogger("mnemoweave.daemon")
REJECTED = "rejected"  # spooled payloads the adapter refused, kept for a look


def spooled(home: Path) -> bool:
    return bool(spooled_names(home))


def replay_spool(engine: Any) -> int:
    """Store what hooks spooled, oldest first; returns how many payloads were replayed.
    The spool's reserve (room for payloads on a full disk) is made again first."""
    keep_reserve(engine.home)
    folder = engine.home / SPOOL
    names = spooled_names(engine.home)
    for done, name in enumerate(names):
        path = folder / name
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
            handled = adapters.respond(
                engine, record["host"], record["event"], record["payload"], answer=False
            )
            adapters.store(engine, handled)  # stored, not woven: nobody waits for an answer
        except StoreDamaged as exc:  # kept for when the store is mended
            log.error("the spool is kept: %s", exc)
            return done
        except (ValueError, KeyError, TypeError, MnemoweaveError) as exc:
            log.warning("spooled %s refused: %s", name, exc)
            (folder / REJECTED).mkdir(exist_ok=True)
            os.replace(path, folder / REJECTED / name)
            continue
        path.unlink()
    return len(names)
