"""Where hook payloads wait for the daemon: the spool folder under the data dir, its
payload files (written by hook.py, replayed by daemon/spool.py) and its reserve, room kept
for a payload when the disk fills up. Standard library only: the hook reads it."""

from __future__ import annotations

import os

SPOOL = "spool"
RESERVE = ".reserve"  # spool/.reserve: room kept for a payload when the disk fills up
RESERVE_BYTES = 1 << 20  # enough for hundreds of spooled prompts and the log lines

TYPE_CHECKING = False
if TYPE_CHECKING:
    from os import PathLike


def spooled_names(where: str | PathLike[str]) -> list[str]:
    """The names of the payloads waiting in the spool, oldest first (a file being written,
    `.NAME`, and the reserve are not payloads)."""
    try:
        names = os.listdir(os.path.join(where, SPOOL))
    except FileNotFoundError:
        return []
    return sorted(n for n in names if n.endswith(".json") and n[0] != ".")
