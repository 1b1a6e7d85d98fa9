"""Which project a directory belongs to, named by its repository rather than its path.

The key is the normalised URL of the `origin` remote (`github.com/org/repo`: scheme,
credentials, port and `.git` dropped), so every clone, worktree and moved checkout of a
repository shares one memory. A repository without a remote is named by its main
worktree's root (a `git worktree` shares with its main checkout); a directory outside git
by itself. Keys name scopes; they are never used as paths to write to.
"""

from __future__ import annotations

import functools
import os
import posixpath
import re
import subprocess
import unicodedata

MAX_PROJECT = 512  # characters in a project name (a deep checkout's path fits)
GIT_TIMEOUT = 1.0  # seconds per git call: the prompt hook has ~250 ms in all, git takes ~5

_SCP = re.compile(r"^(?:[^@/]+@)?([^:/]+):(?!//)(.+)$")  # git@host:org/repo


def normalise_project(name: str) -> str:
    """NFC, forward slashes, no trailing slash, no control characters, at most MAX_PROJECT
    characters."""
    name = unicodedata.normalize("NFC", name).replace("\\", "/")
    name = "".join(ch for ch in name if ch.isprintable())
    if name.startswith("/"):
        name = posixpath.normpath(name)
    return name.rstrip("/")[:MAX_PROJECT] if name != "/" else name


def remote_key(url: str) -> str:
    """`host/org/repo` for any spelling of a remote URL (https, ssh, scp-like `git@host:`,
    with credentials or a port); a local remote (a path or file://) gives its path."""
    url = url.strip()
    scp = _SCP.match(url)
    if "://" not in url and scp and len(scp.group(1)) > 1:  # not a drive letter (C:/...)
        host, path = scp.groups()
    elif "://" in url:
        scheme, rest = url.split("://", 1)
        location, _, path = rest.partition("/")
        host = location.rsplit("@", 1)[-1].split(":")[0]
        if scheme == "file" or not host:
            host, path = "", "/" + path
    else:
        host, path = "", url
    path = path.strip("/") if host else path.rstrip("/")
    path = path[: -len(".git")] if path.endswith(".git") else path
    return normalise_project(f"{host.lower()}/{path}" if host else path)


def display_name(key: str) -> str:
    """What a person reads for a key: `org/repo` for a remote's, the last two parts of a
    path, 'global' for the global scope."""
    if not key:
        return "global"
    parts = key.strip("/").split("/")
    return "/".join(parts[-2:] if key.startswith("/") else parts[1:] or parts)


def checkout_root(path: str) -> str | None:
    """The top of the checkout holding `path` (a dir with `.git`, a file in a worktree)."""
    probe = path
    while True:
        if os.path.exists(os.path.join(probe, ".git")):
            return probe
        parent = os.path.dirname(probe)
        if parent == probe:
            return None
        probe = parent


def project_from_cwd(cwd: str | None) -> str:
    """The project key of the directory `cwd` (see the module's docstring).

    An empty or relative cwd gives the global scope ('').
    """
    if not cwd or not os.path.isabs(cwd):
        return ""
    path = os.path.normpath(cwd)
    root = checkout_root(path)
    return repository_key(root) if root else normalise_project(path)


@functools.lru_cache(maxsize=256)
def repository_key(root: str) -> str:
    """The key of the checkout at `root`: its origin's URL, else its main worktree's root
    (cached: a checkout's key does not change while a process runs)."""
    url = _git(root, "config", "--get", "remote.origin.url")
    if url:
        return remote_key(url)
    common = _git(root, "rev-parse", "--path-format=absolute", "--git-common-dir")
    if common:
        main = os.path.dirname(common) if os.path.basename(common) == ".git" else common
        return normalise_project(main)
    return normalise_project(root)


def _git(root: str, *args: str) -> str:
    """A git query's output, or '' when git is missing, fails or is too slow."""
    try:
        done = subprocess.run(
            ["git", "-C", root, *args],
            capture_output=True,
            text=True,
            timeout=GIT_TIMEOUT,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.SubprocessError):
        return ""
    return done.stdout.strip() if done.returncode == 0 else ""
