"""Which project a session belongs to: the git root of its working directory, or the dir.

The result is a name for scoping memories, normalised so that the same checkout always
gets the same name; it is never used as a path to write to.
"""

from __future__ import annotations

import os
import posixpath
import unicodedata

MAX_PROJECT = 512  # characters in a project name (a deep checkout's path fits)


def normalise_project(name: str) -> str:
    """NFC, forward slashes, no trailing slash, no control characters, at most MAX_PROJECT
    characters."""
    name = unicodedata.normalize("NFC", name).replace("\\", "/")
    name = "".join(ch for ch in name if ch.isprintable())
    if name.startswith("/"):
        name = posixpath.normpath(name)
    return name.rstrip("/")[:MAX_PROJECT] if name != "/" else name


def project_from_cwd(cwd: str | None) -> str:
    """The git root above `cwd` (a `.git` dir or file: worktrees have a file), else `cwd`.

    An empty or relative cwd gives the global scope ('').
    """
    if not cwd or not os.path.isabs(cwd):
        return ""
    path = os.path.normpath(cwd)
    probe = path
    while True:
        if os.path.exists(os.path.join(probe, ".git")):
            return normalise_project(probe)
        parent = os.path.dirname(probe)
        if parent == probe:
            return normalise_project(path)
        probe = parent
