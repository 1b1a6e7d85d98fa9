"""The data dir is private: it and every directory in it 0700, every file in it 0600,
whatever the caller's umask.

Every process that writes there calls `restrict` first (the CLI, and so the daemon and the
MCP server it runs; the hooks; whatever opens the store), so what it creates is owner-only
from the start. What is still open to group or others (files of a version that did not do
this, a file copied in) is found by `loose` and closed by `tighten`: a store migration
does it once, `doctor --repair` on demand. Standard library only: the hooks import it.
"""

from __future__ import annotations

import os
import stat

TYPE_CHECKING = False  # a hook process imports this module for restrict() alone
if TYPE_CHECKING:
    from pathlib import Path

OPEN = 0o077  # the permission bits of group and others


def restrict() -> None:
    """From now on, everything this process creates is its owner's only (files 0600,
    directories 0700 at most)."""
    os.umask(OPEN)


M_PERTURB = -6  # glibc's mallopt parameter
PERTURB_BYTE = 0xA5


def scrub_freed_memory() -> None:
    """From now on this process's heap memory is overwritten when freed and filled when
    handed out (glibc's M_PERTURB; a no-op elsewhere; calling it again changes nothing). A
    library that writes a buffer to disk without initialising all of it (Chroma's HNSW
    file) then never carries text the process held before redacting it, such as a
    prompt's secret."""
    try:
        import ctypes

        ctypes.CDLL(None).mallopt(M_PERTURB, PERTURB_BYTE)
    except (OSError, AttributeError):  # not glibc: no mallopt, or no such parameter
        pass


def make_dir(home: Path) -> None:
    """Create the data dir (and its missing parents), the data dir itself 0700."""
    home.mkdir(mode=0o700, parents=True, exist_ok=True)


def _entries(home: Path) -> list[Path]:
    """The data dir (where it is, if it is a link) and everything under it; symlinks
    under it are listed, never followed."""
    home = home.resolve()
    if not home.is_dir():
        return []
    found = [home]
    for folder, dirs, files in os.walk(home):
        found += [home / os.path.relpath(folder, home) / name for name in (*dirs, *files)]
    return found


def loose(home: Path) -> list[Path]:
    """What under the data dir (itself included) group or others may read, write or enter.
    A symlink's own mode means nothing, and what it points to is not ours: both skipped."""
    found = []
    for path in _entries(home):
        try:
            mode = path.lstat().st_mode
        except FileNotFoundError:  # removed while we looked (a socket, a temporary file)
            continue
        if not stat.S_ISLNK(mode) and mode & OPEN:
            found.append(path)
    return found


def tighten(home: Path) -> None:
    """Take every permission of group and others away under the data dir; what cannot be
    changed (another user's file) stays as it is, for `loose` to report."""
    for path in loose(home):
        try:
            os.chmod(path, stat.S_IMODE(path.lstat().st_mode) & ~OPEN)
        except OSError:
            continue
