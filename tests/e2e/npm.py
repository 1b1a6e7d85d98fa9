"""Host CLIs from npm, pinned and installed once into the e2e cache directory
(``$MNEMOWEAVE_E2E_CACHE``, else ``.e2e-cache/`` at the repository root) that later test
runs reuse, each version in a folder of its own (``<folder>-<version>``).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[2]
CACHE_ENV = "MNEMOWEAVE_E2E_CACHE"
CACHE_FROM_ENV = os.environ.get(CACHE_ENV)

NPM_TIMEOUT = 600
VERSION_TIMEOUT = 60
NETWORK_ERRORS = re.compile(
    r"ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ECONNRESET|ETIMEDOUT|ESOCKETTIMEDOUT|ENETUNREACH|"
    r"EHOSTUNREACH|ENOTCACHED|network request|request to https?://\S+ failed|"
    r"getaddrinfo|socket hang up",
    re.IGNORECASE,
)


class CliUnavailable(Exception):
    """A host CLI cannot be run here (no node/npm, or no network and nothing cached)."""


@dataclass(frozen=True)
class InstalledCli:
    executable: Path
    version: str
    install_dir: Path


@dataclass(frozen=True)
class NpmCli:
    """A CLI published on npm as ``package``, whose executable is ``command``."""

    title: str
    package: str
    command: str
    folder: str
    offline_env: Mapping[str, str]
    unavailable: type[CliUnavailable] = CliUnavailable

    def installed(self, install_dir: Path) -> InstalledCli | None:
        """The install in ``install_dir`` if its executable reports a version (run with a
        throwaway HOME, TMPDIR and XDG dirs)."""
        executable = install_dir / "node_modules" / ".bin" / self.command
        if not os.access(executable, os.X_OK):
            return None
        try:
            with tempfile.TemporaryDirectory(prefix=f"{self.command}-version-") as home:
                xdg = {
                    f"XDG_{name}_HOME": str(Path(home) / name.lower())
                    for name in ("CONFIG", "DATA", "CACHE", "STATE")
                }
                out = subprocess.run(
                    [str(executable), "--version"],
                    capture_output=True,
                    text=True,
                    timeout=VERSION_TIMEOUT,
                    stdin=subprocess.DEVNULL,
                    env={**os.environ, **self.offline_env, **xdg, "HOME": home, "TMPDIR": home},
                )
        except (OSError, subprocess.TimeoutExpired):
            return None
        match = re.search(r"\d+\.\d+\.\d+\S*", out.stdout)
        if out.returncode != 0 or not match:
            return None
        return InstalledCli(executable, match.group(0), install_dir)

    def install(self, version: str, cache: Path | None = None) -> InstalledCli:
        """The pinned ``version`` from the cache, installing it on first use.

        Falls back to the newest published version only when the pinned one cannot be
        installed for a reason other than the network. Raises ``self.unavailable`` when
        node or npm is missing, or when the network is unreachable and nothing usable is
        cached; raises ``RuntimeError`` for any other install failure.
        """
        cache = cache or cache_dir()
        npm = shutil.which("npm")
        if shutil.which("node") is None or npm is None:
            raise self.unavailable(f"node and npm are needed to install {self.title}")
        cache.mkdir(parents=True, exist_ok=True)
        _remove_stale_staging(cache)
        failures: list[str] = []
        for label in (version, "latest"):
            target = cache / f"{self.folder}-{label}"
            found = self.installed(target)
            if found is not None:
                return found
            spec = f"{self.package}@{label}"
            ok, output = _npm_install(npm, cache, spec, target, self.installed)
            if ok and (found := self.installed(target)) is not None:
                return found
            failures.append(f"{spec}: {output.strip()[-2000:]}")
            if NETWORK_ERRORS.search(output):
                fallback = self.installed(cache / f"{self.folder}-latest")
                if fallback is not None:
                    return fallback
                raise self.unavailable(
                    f"cannot install {spec}: no network and no cached install in {cache}"
                )
        raise RuntimeError(f"installing {self.title} failed:\n" + "\n\n".join(failures))


def cache_dir() -> Path:
    root = Path(CACHE_FROM_ENV) if CACHE_FROM_ENV else REPO_ROOT / ".e2e-cache"
    if not root.is_absolute():
        root = REPO_ROOT / root
    return root


def _npm_env(cache: Path) -> dict[str, str]:
    dropped = {"npm_config_global", "npm_config_prefix", "npm_config_cache"}
    env = {k: v for k, v in os.environ.items() if k.lower() not in dropped}
    npm_home = cache / "npm-home"
    npm_home.mkdir(parents=True, exist_ok=True)
    user_npmrc = Path.home() / ".npmrc"
    if user_npmrc.is_file() and not any(k.lower() == "npm_config_userconfig" for k in env):
        env["npm_config_userconfig"] = str(user_npmrc)
    env.update(
        HOME=str(npm_home),
        npm_config_cache=str(cache / "npm"),
        npm_config_update_notifier="false",
        npm_config_audit="false",
        npm_config_fund="false",
        npm_config_fetch_retries="1",
        npm_config_fetch_retry_mintimeout="1000",
        npm_config_fetch_retry_maxtimeout="5000",
        npm_config_fetch_timeout="120000",
    )
    return env


def _npm_install(
    npm: str, cache: Path, spec: str, target: Path, installed: Callable[[Path], Any]
) -> tuple[bool, str]:
    """Install ``spec`` into ``target`` through a staging directory renamed into place;
    ``installed(dir)`` says whether a directory holds a working install."""
    staging = Path(tempfile.mkdtemp(prefix=".staging-", dir=cache))
    try:
        proc = subprocess.run(
            [
                npm,
                "install",
                "--prefix",
                str(staging),
                "--no-save",
                "--prefer-offline",
                "--loglevel=error",
                spec,
            ],
            capture_output=True,
            text=True,
            timeout=NPM_TIMEOUT,
            stdin=subprocess.DEVNULL,
            env=_npm_env(cache),
        )
    except subprocess.TimeoutExpired as exc:
        shutil.rmtree(staging, ignore_errors=True)
        return False, f"npm install {spec} timed out after {exc.timeout} s (ETIMEDOUT)"
    output = (proc.stdout or "") + (proc.stderr or "")
    if proc.returncode != 0 or installed(staging) is None:
        shutil.rmtree(staging, ignore_errors=True)
        return False, output or f"npm install {spec} exited {proc.returncode}"
    try:
        staging.rename(target)
    except OSError:
        shutil.rmtree(staging, ignore_errors=True)
        if installed(target) is None:
            raise
    return True, output


def _remove_stale_staging(cache: Path, older_than: float = 3600) -> None:
    now = time.time()
    for stale in cache.glob(".staging-*"):
        try:
            if now - stale.stat().st_mtime > older_than:
                shutil.rmtree(stale, ignore_errors=True)
        except OSError:
            pass
