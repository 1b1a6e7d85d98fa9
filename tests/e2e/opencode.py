"""The real OpenCode CLI, run offline against the in-process fake OpenAI-compatible server.

``install_opencode`` installs ``opencode-ai`` from npm once into the e2e cache directory
(``$MNEMOWEAVE_E2E_CACHE``, else ``.e2e-cache/`` at the repository root; the same one
Claude Code's install uses), as ``opencode-<version>``. ``OpenCodeHarness`` gives one test
an isolated HOME, XDG directories, TMPDIR and git project, with the fake provider declared
in the user's ``opencode.json`` and the npm installs OpenCode would start seeded, so it
never waits on the network; ``run`` runs ``opencode run --format json -m fake/fake-model``
there and returns a ``Result`` with the requests that reached the fake model during the
run. ``use_plugin`` links ``plugins/opencode/mnemoweave.js`` into the project's
``.opencode/plugin/``.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .claude import _NETWORK_ERRORS, _npm_install, _remove_stale_staging, cache_dir
from .fake_openai import FakeOpenAI, completion_bodies, content_text

OPENCODE_PACKAGE = "opencode-ai"
OPENCODE_VERSION = "1.18.33"
REPO_ROOT = Path(__file__).resolve().parents[2]
PLUGIN = REPO_ROOT / "plugins" / "opencode" / "mnemoweave.js"
MODEL = "fake/fake-model"
_DROPPED_ENV_PREFIXES = ("OPENCODE", "MNEMOWEAVE_", "XDG_", "OPENAI_", "ANTHROPIC_", "CLAUDE")
OFFLINE_ENV = {
    "OPENCODE_DISABLE_AUTOUPDATE": "1",
    "OPENCODE_DISABLE_MODELS_FETCH": "1",
    "OPENCODE_DISABLE_SHARE": "1",
    "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
    "OPENCODE_DISABLE_CLAUDE_CODE": "1",
}
# OpenCode installs @opencode-ai/plugin in each config dir unless it finds it locked there.
_SEED_PACKAGE = {"dependencies": {"@opencode-ai/plugin": "*"}}
_SEED_LOCK = {"lockfileVersion": 3, "packages": {"": _SEED_PACKAGE}}
REAP_GRACE = 3.0  # seconds a run's leftover processes get before they are killed


class OpenCodeUnavailable(Exception):
    """OpenCode cannot be run here (no node/npm, or no network and nothing cached)."""


class OpenCodeTimeout(AssertionError):
    """An ``opencode run`` outlived its timeout; it and its process group were killed."""


@dataclass(frozen=True)
class OpenCode:
    executable: Path
    version: str
    install_dir: Path


def _installed(install_dir: Path) -> OpenCode | None:
    executable = install_dir / "node_modules" / ".bin" / "opencode"
    if not os.access(executable, os.X_OK):
        return None
    try:
        with tempfile.TemporaryDirectory(prefix="opencode-version-") as home:
            xdg = {
                f"XDG_{name}_HOME": str(Path(home) / name.lower())
                for name in ("CONFIG", "DATA", "CACHE", "STATE")
            }
            out = subprocess.run(
                [str(executable), "--version"],
                capture_output=True,
                text=True,
                timeout=60,
                stdin=subprocess.DEVNULL,
                env={**os.environ, **OFFLINE_ENV, **xdg, "HOME": home, "TMPDIR": home},
            )
    except (OSError, subprocess.TimeoutExpired):
        return None
    match = re.search(r"\d+\.\d+\.\d+\S*", out.stdout)
    if out.returncode != 0 or not match:
        return None
    return OpenCode(executable, match.group(0), install_dir)


def install_opencode(cache: Path | None = None, version: str = OPENCODE_VERSION) -> OpenCode:
    """The pinned OpenCode from the cache, installing it on first use.

    Falls back to the newest published version only when the pinned one cannot be
    installed for a reason other than the network. Raises ``OpenCodeUnavailable`` when node
    or npm is missing, or when the network is unreachable and nothing usable is cached;
    raises ``RuntimeError`` for any other install failure.
    """
    cache = cache or cache_dir()
    npm = shutil.which("npm")
    if shutil.which("node") is None or npm is None:
        raise OpenCodeUnavailable("node and npm are needed to install OpenCode")
    cache.mkdir(parents=True, exist_ok=True)
    _remove_stale_staging(cache)
    failures: list[str] = []
    for label in (version, "latest"):
        target = cache / f"opencode-{label}"
        found = _installed(target)
        if found is not None:
            return found
        spec = f"{OPENCODE_PACKAGE}@{label}"
        ok, output = _npm_install(npm, cache, spec, target, installed=_installed)
        if ok and (found := _installed(target)) is not None:
            return found
        failures.append(f"{spec}: {output.strip()[-2000:]}")
        if _NETWORK_ERRORS.search(output):
            fallback = _installed(cache / "opencode-latest")
            if fallback is not None:
                return fallback
            raise OpenCodeUnavailable(
                f"cannot install {spec}: no network and no cached install in {cache}"
            )
    raise RuntimeError("installing OpenCode failed:\n" + "\n\n".join(failures))


def seed_offline(*folders: Path) -> None:
    """Make OpenCode skip its background `npm install @opencode-ai/plugin` in these config
    dirs (it retries for about 70 s offline): it skips when the lock file lists the
    dependency and node_modules exists."""
    for folder in folders:
        (folder / "node_modules").mkdir(parents=True, exist_ok=True)
        (folder / "package.json").write_text(json.dumps(_SEED_PACKAGE))
        (folder / "package-lock.json").write_text(json.dumps(_SEED_LOCK))


def provider_config(base_url: str, **model: Any) -> dict[str, Any]:
    """An opencode.json declaring the fake server as provider `fake`, model `fake-model`."""
    return {
        "$schema": "https://opencode.ai/config.json",
        "model": MODEL,
        "small_model": MODEL,
        "autoupdate": False,
        "share": "disabled",
        "provider": {
            "fake": {
                "npm": "@ai-sdk/openai-compatible",
                "name": "Fake",
                "options": {"baseURL": base_url, "apiKey": "sk-fake"},
                "models": {"fake-model": {"name": "Fake Model", "tool_call": True, **model}},
            }
        },
    }


@dataclass
class Result:
    """One ``opencode run``: exit code, output, and the requests the fake model received."""

    rc: int
    stdout: str
    stderr: str
    requests: list[dict[str, Any]]
    args: list[str] = field(default_factory=list)
    elapsed: float = 0.0

    @property
    def events(self) -> list[dict[str, Any]]:
        """The JSON events of ``--format json`` (lines that are not JSON are skipped)."""
        found = []
        for line in self.stdout.splitlines():
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if isinstance(event, dict):
                found.append(event)
        return found

    @property
    def session_id(self) -> str | None:
        return next((e["sessionID"] for e in self.events if e.get("sessionID")), None)

    @property
    def reply(self) -> str:
        """The text the model answered with."""
        return "".join(
            (e.get("part") or {}).get("text") or "" for e in self.events if e.get("type") == "text"
        )

    @property
    def bodies(self) -> list[dict[str, Any]]:
        return completion_bodies(self.requests)

    @property
    def model_text(self) -> str:
        """Every message text of every completion request of this run."""
        return "\n".join(
            content_text(m.get("content"))
            for body in self.bodies
            for m in body.get("messages") or []
            if isinstance(m, dict)
        )

    @property
    def user_text(self) -> str:
        """The user messages' text (where a plugin's synthetic text part lands)."""
        return user_text(self.requests)

    def __repr__(self) -> str:
        return (
            f"Result(rc={self.rc}, reply={self.reply!r}, requests={len(self.requests)}, "
            f"elapsed={self.elapsed:.1f}s, args={self.args[1:]!r},\n"
            f"  stdout={self.stdout[-1500:]!r},\n  stderr={self.stderr[-3000:]!r})"
        )


def user_text(requests: Iterable[Mapping[str, Any]]) -> str:
    return "\n".join(
        content_text(m.get("content"))
        for body in completion_bodies(list(requests))
        for m in body.get("messages") or []
        if isinstance(m, dict) and m.get("role") == "user"
    )


class OpenCodeHarness:
    """An isolated HOME, XDG tree and git project for running the real CLI against
    ``server``. Runs in one harness share them, so later runs see what earlier ones left."""

    def __init__(
        self,
        opencode: OpenCode,
        server: FakeOpenAI,
        root: Path,
        mnemoweave_home: Path,
        project: Path | None = None,
    ) -> None:
        self.opencode = opencode
        self.server = server
        self.root = root
        self.home = root / "home"
        self.xdg = root / "xdg"
        self.tmpdir = root / "tmp"
        self.cwd = project or root / "project"
        self.mnemoweave_home = mnemoweave_home
        self.results: list[Result] = []
        for directory in (self.home, self.tmpdir, self.cwd, mnemoweave_home, self.config_dir):
            directory.mkdir(parents=True, exist_ok=True)
        for name in ("data", "cache", "state"):
            (self.xdg / name).mkdir(parents=True, exist_ok=True)
        self.write_config()
        seed_offline(self.config_dir, self.cwd / ".opencode")
        git = shutil.which("git")
        if git and not (self.cwd / ".git").exists():
            subprocess.run(
                [git, "init", "-q", str(self.cwd)],
                check=True,
                capture_output=True,
                timeout=30,
                stdin=subprocess.DEVNULL,
                env={**self.env(), "GIT_CONFIG_NOSYSTEM": "1"},
            )

    @property
    def config_dir(self) -> Path:
        """The user's OpenCode config dir ($XDG_CONFIG_HOME/opencode)."""
        return self.xdg / "config" / "opencode"

    def write_config(self, **model: Any) -> Path:
        """The user's opencode.json: the fake provider (``model`` adds to the model entry,
        for example ``limit={"context": 20000, "output": 1000}``)."""
        path = self.config_dir / "opencode.json"
        path.write_text(json.dumps(provider_config(self.server.base_url, **model), indent=2))
        return path

    def use_plugin(self, source: Path = PLUGIN) -> Path:
        """Link the plugin into the project's `.opencode/plugin/`."""
        folder = self.cwd / ".opencode" / "plugin"
        folder.mkdir(parents=True, exist_ok=True)
        link = folder / source.name
        link.unlink(missing_ok=True)
        link.symlink_to(source)
        return link

    def env(self, extra: Mapping[str, str | None] | None = None) -> dict[str, str]:
        """The caller's environment minus OpenCode/mnemoweave/XDG/provider settings, with
        HOME, TMPDIR, XDG dirs and MNEMOWEAVE_HOME inside this harness, PWD the project
        (OpenCode takes its directory from PWD) and the test interpreter's bin first on
        PATH."""
        env = {k: v for k, v in os.environ.items() if not k.startswith(_DROPPED_ENV_PREFIXES)}
        path = env.get("PATH", os.defpath)
        env.update(OFFLINE_ENV)
        env.update(
            HOME=str(self.home),
            TMPDIR=str(self.tmpdir),
            XDG_CONFIG_HOME=str(self.xdg / "config"),
            XDG_DATA_HOME=str(self.xdg / "data"),
            XDG_CACHE_HOME=str(self.xdg / "cache"),
            XDG_STATE_HOME=str(self.xdg / "state"),
            MNEMOWEAVE_HOME=str(self.mnemoweave_home),
            PWD=str(self.cwd),
            PATH=os.pathsep.join([str(Path(sys.executable).parent), path]),
        )
        for key, value in (extra or {}).items():
            if value is None:
                env.pop(key, None)
            else:
                env[key] = value
        return env

    def run(
        self,
        prompt: str,
        *extra_args: str,
        env: Mapping[str, str | None] | None = None,
        timeout: float = 120,
    ) -> Result:
        """``opencode run --format json -m fake/fake-model *extra_args WORDS...``: the
        prompt goes as separate words (OpenCode quotes an argument that holds spaces).

        Raises ``OpenCodeTimeout`` (after killing the run's process group) past
        ``timeout``. What the run leaves in its process group gets REAP_GRACE seconds.
        """
        args = [str(self.opencode.executable), "run", "--format", "json", "-m", MODEL]
        args.extend(extra_args)
        args.extend(prompt.split())
        first = len(self.server.requests)
        start = time.monotonic()
        proc = subprocess.Popen(
            args,
            cwd=self.cwd,
            env=self.env(env),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        try:
            stdout, stderr = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_group(proc.pid)
            stdout, stderr = proc.communicate(timeout=30)
            raise OpenCodeTimeout(
                f"opencode did not finish within {timeout} s: {args[1:]!r}\n"
                f"stdout: {stdout[-1500:]!r}\nstderr: {stderr[-3000:]!r}"
            ) from None
        finally:
            if proc.poll() is None:
                _kill_group(proc.pid)
                proc.wait(timeout=30)
        _reap_group(proc.pid, REAP_GRACE)
        result = Result(
            rc=proc.returncode,
            stdout=stdout,
            stderr=stderr,
            requests=list(self.server.requests[first:]),
            args=args,
            elapsed=time.monotonic() - start,
        )
        self.results.append(result)
        return result


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def _reap_group(pgid: int, grace: float) -> None:
    """Wait up to ``grace`` seconds for the run's process group to end, then kill it. (The
    daemon a plugin starts runs in a session of its own and is not touched.)"""
    deadline = time.monotonic() + grace
    while _group_alive(pgid):
        if time.monotonic() >= deadline:
            _kill_group(pgid)
            return
        time.sleep(0.05)
