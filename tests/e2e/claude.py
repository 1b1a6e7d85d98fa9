"""The real Claude Code CLI, run offline against the in-process fake Anthropic server.

``install_claude_code`` installs ``@anthropic-ai/claude-code`` from npm once into a cache
directory (``$MNEMOWEAVE_E2E_CACHE``, else ``.e2e-cache/`` at the repository root) that is
reused by later test runs. ``ClaudeHarness`` gives one test an isolated HOME, TMPDIR and
git project and runs ``claude -p PROMPT --output-format json`` there; each run returns a
``Result`` carrying the requests that reached the fake model during that run.
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
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .fake_anthropic import FakeAnthropic

CLAUDE_CODE_PACKAGE = "@anthropic-ai/claude-code"
CLAUDE_CODE_VERSION = "2.1.197"
REPO_ROOT = Path(__file__).resolve().parents[2]
CACHE_ENV = "MNEMOWEAVE_E2E_CACHE"
CACHE_FROM_ENV = os.environ.get(CACHE_ENV)
RUN_TOKEN_ENV = "E2E_CLAUDE_RUN_TOKEN"

NPM_TIMEOUT = 600
_NETWORK_ERRORS = re.compile(
    r"ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ECONNRESET|ETIMEDOUT|ESOCKETTIMEDOUT|ENETUNREACH|"
    r"EHOSTUNREACH|ENOTCACHED|network request|request to https?://\S+ failed|"
    r"getaddrinfo|socket hang up",
    re.IGNORECASE,
)
_DROPPED_ENV_PREFIXES = ("ANTHROPIC_", "CLAUDE", "MNEMOWEAVE_", "XDG_", "OTEL_")
OFFLINE_ENV = {
    "DISABLE_TELEMETRY": "1",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "DISABLE_BUG_COMMAND": "1",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
}


class ClaudeUnavailable(Exception):
    """Claude Code cannot be run here (no node/npm, or no network and nothing cached)."""


class ClaudeTimeout(AssertionError):
    """A ``claude`` run outlived its timeout; it and its child processes were killed."""


@dataclass(frozen=True)
class ClaudeCode:
    executable: Path
    version: str
    install_dir: Path


def cache_dir() -> Path:
    root = Path(CACHE_FROM_ENV) if CACHE_FROM_ENV else REPO_ROOT / ".e2e-cache"
    if not root.is_absolute():
        root = REPO_ROOT / root
    return root


def _installed(install_dir: Path) -> ClaudeCode | None:
    executable = install_dir / "node_modules" / ".bin" / "claude"
    if not os.access(executable, os.X_OK):
        return None
    try:
        with tempfile.TemporaryDirectory(prefix="claude-version-") as home:
            out = subprocess.run(
                [str(executable), "--version"],
                capture_output=True,
                text=True,
                timeout=60,
                stdin=subprocess.DEVNULL,
                env={**os.environ, **OFFLINE_ENV, "HOME": home, "TMPDIR": home},
            )
    except (OSError, subprocess.TimeoutExpired):
        return None
    match = re.search(r"\d+\.\d+\.\d+\S*", out.stdout)
    if out.returncode != 0 or not match:
        return None
    return ClaudeCode(executable, match.group(0), install_dir)


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
    npm: str,
    cache: Path,
    spec: str,
    target: Path,
    installed: Callable[[Path], Any] | None = None,
) -> tuple[bool, str]:
    """Install ``spec`` into ``target`` through a staging directory renamed into place;
    ``installed(dir)`` (Claude Code's check by default) says whether a directory holds a
    working install."""
    installed = installed or _installed
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


def install_claude_code(
    cache: Path | None = None, version: str = CLAUDE_CODE_VERSION
) -> ClaudeCode:
    """The pinned Claude Code from the cache, installing it on first use.

    Falls back to the newest published version only when the pinned one cannot be
    installed for a reason other than the network. Raises ``ClaudeUnavailable`` when node
    or npm is missing, or when the network is unreachable and nothing usable is cached;
    raises ``RuntimeError`` for any other install failure.
    """
    cache = cache or cache_dir()
    npm = shutil.which("npm")
    if shutil.which("node") is None or npm is None:
        raise ClaudeUnavailable("node and npm are needed to install Claude Code")
    cache.mkdir(parents=True, exist_ok=True)
    _remove_stale_staging(cache)
    failures: list[str] = []
    for label in (version, "latest"):
        target = cache / f"claude-code-{label}"
        found = _installed(target)
        if found is not None:
            return found
        ok, output = _npm_install(npm, cache, f"{CLAUDE_CODE_PACKAGE}@{label}", target)
        if ok:
            found = _installed(target)
            if found is not None:
                return found
        failures.append(f"{CLAUDE_CODE_PACKAGE}@{label}: {output.strip()[-2000:]}")
        if _NETWORK_ERRORS.search(output):
            fallback = _installed(cache / "claude-code-latest")
            if fallback is not None:
                return fallback
            raise ClaudeUnavailable(
                f"cannot install {CLAUDE_CODE_PACKAGE}@{label}: no network and no cached "
                f"install in {cache}"
            )
    raise RuntimeError("installing Claude Code failed:\n" + "\n\n".join(failures))


@dataclass
class Result:
    """One ``claude -p`` run: exit code, output, and the requests the fake model received."""

    rc: int
    stdout: str
    stderr: str
    requests: list[dict[str, Any]]
    args: list[str] = field(default_factory=list)
    elapsed: float = 0.0

    @property
    def json(self) -> dict[str, Any] | None:
        try:
            data = json.loads(self.stdout)
        except ValueError:
            return None
        return data if isinstance(data, dict) else None

    @property
    def reply(self) -> str | None:
        """The final answer text (``result`` of the JSON output)."""
        data = self.json
        return data.get("result") if data else None

    @property
    def session_id(self) -> str | None:
        data = self.json
        return data.get("session_id") if data else None

    @property
    def bodies(self) -> list[dict[str, Any]]:
        """Bodies of the ``POST /v1/messages`` requests of this run."""
        return message_bodies(self.requests)

    @property
    def model_text(self) -> str:
        return model_text(self.requests)

    @property
    def injected_text(self) -> str:
        return injected_text(self.requests)

    def __repr__(self) -> str:
        return (
            f"Result(rc={self.rc}, reply={self.reply!r}, requests={len(self.requests)}, "
            f"elapsed={self.elapsed:.1f}s, args={self.args[1:]!r},\n"
            f"  stdout={self.stdout[-1500:]!r},\n  stderr={self.stderr[-3000:]!r})"
        )


def message_bodies(requests: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    return [
        r["body"]
        for r in requests
        if r.get("method") == "POST"
        and str(r.get("path", "")).split("?")[0].endswith("/v1/messages")
        and isinstance(r.get("body"), dict)
    ]


def _content_texts(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content]
    texts: list[str] = []
    for block in content if isinstance(content, list) else []:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            texts.append(block.get("text") or "")
        elif kind == "tool_result":
            texts.extend(_content_texts(block.get("content")))
        elif kind == "tool_use":
            texts.append(json.dumps(block.get("input"), ensure_ascii=False))
    return texts


def request_texts(body: Mapping[str, Any], *, system_prompt: bool = True) -> list[str]:
    """Every text of one request body: the system prompt (unless excluded), then each
    message's text blocks, tool results and tool inputs, ``role: system`` entries included."""
    texts = _content_texts(body.get("system")) if system_prompt else []
    for message in body.get("messages") or []:
        if isinstance(message, dict):
            texts.extend(_content_texts(message.get("content")))
    return texts


def model_text(requests: Iterable[Mapping[str, Any]], *, system_prompt: bool = True) -> str:
    """All text that reached the model in these recorded requests, joined by newlines."""
    return "\n".join(
        text
        for body in message_bodies(requests)
        for text in request_texts(body, system_prompt=system_prompt)
    )


def injected_text(requests: Iterable[Mapping[str, Any]]) -> str:
    """Text Claude Code added to the conversation beside the user's own words: the
    ``role: system`` entries of ``messages`` (where hook additional context lands) and the
    ``<system-reminder>`` text blocks (where tool hook context lands)."""
    parts: list[str] = []
    for body in message_bodies(requests):
        for message in body.get("messages") or []:
            if not isinstance(message, dict):
                continue
            texts = _content_texts(message.get("content"))
            if message.get("role") == "system":
                parts.extend(texts)
            else:
                parts.extend(t for t in texts if "<system-reminder>" in t)
    return "\n".join(parts)


def make_plugin(
    directory: Path,
    name: str,
    hooks: Mapping[str, Any],
    files: Mapping[str, str] | None = None,
) -> Path:
    """Write a Claude Code plugin (``.claude-plugin/plugin.json`` + ``hooks/hooks.json``)
    into ``directory``, plus any ``files`` (relative path -> text); for ``--plugin-dir``."""
    (directory / ".claude-plugin").mkdir(parents=True, exist_ok=True)
    (directory / "hooks").mkdir(parents=True, exist_ok=True)
    manifest = {"name": name, "version": "0.0.1", "description": f"{name} test plugin"}
    (directory / ".claude-plugin" / "plugin.json").write_text(json.dumps(manifest, indent=2))
    (directory / "hooks" / "hooks.json").write_text(json.dumps({"hooks": dict(hooks)}, indent=2))
    for relative, text in (files or {}).items():
        path = directory / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return directory


class ClaudeHarness:
    """An isolated HOME, TMPDIR and git project for running the real CLI against ``server``.

    Runs in one harness share HOME and project, so a later run sees what earlier ones left
    on disk (transcripts, memory data); each run is still a new session unless ``-c`` or
    ``--resume`` is passed.
    """

    def __init__(
        self,
        claude: ClaudeCode,
        server: FakeAnthropic,
        root: Path,
        mnemoweave_home: Path,
        background_timeout: float = 10.0,
    ) -> None:
        self.claude = claude
        self.server = server
        self.root = root
        self.home = root / "home"
        self.cwd = root / "project"
        self.tmpdir = root / "tmp"
        self.mnemoweave_home = mnemoweave_home
        self.background_timeout = background_timeout
        self.results: list[Result] = []
        for directory in (self.home / ".claude", self.cwd, self.tmpdir, mnemoweave_home):
            directory.mkdir(parents=True, exist_ok=True)
        self.write_settings({})
        git = shutil.which("git")
        if git:
            subprocess.run(
                [git, "init", "-q", str(self.cwd)],
                check=True,
                capture_output=True,
                timeout=30,
                stdin=subprocess.DEVNULL,
                env={**self.env(), "GIT_CONFIG_NOSYSTEM": "1"},
            )

    @property
    def settings_path(self) -> Path:
        return self.home / ".claude" / "settings.json"

    def write_settings(self, settings: Mapping[str, Any]) -> Path:
        """Replace ``$HOME/.claude/settings.json`` (for example ``{"hooks": {...}}``)."""
        self.settings_path.write_text(json.dumps(dict(settings), indent=2))
        return self.settings_path

    def transcripts(self) -> list[Path]:
        """Session transcripts written so far, oldest first."""
        found = (self.home / ".claude" / "projects").glob("*/*.jsonl")
        return sorted(found, key=lambda p: p.stat().st_mtime)

    def env(self, extra: Mapping[str, str | None] | None = None) -> dict[str, str]:
        """The environment of a run: the caller's, minus Anthropic/Claude/mnemoweave/XDG
        settings, with HOME, TMPDIR, XDG dirs and MNEMOWEAVE_HOME inside this harness, the
        fake server as the API, and the test interpreter's bin directory first on PATH."""
        env = {k: v for k, v in os.environ.items() if not k.startswith(_DROPPED_ENV_PREFIXES)}
        path = env.get("PATH", os.defpath)
        env.update(OFFLINE_ENV)
        env.update(
            HOME=str(self.home),
            TMPDIR=str(self.tmpdir),
            XDG_CONFIG_HOME=str(self.home / ".config"),
            XDG_CACHE_HOME=str(self.home / ".cache"),
            XDG_DATA_HOME=str(self.home / ".local" / "share"),
            XDG_STATE_HOME=str(self.home / ".local" / "state"),
            MNEMOWEAVE_HOME=str(self.mnemoweave_home),
            ANTHROPIC_BASE_URL=self.server.base_url,
            ANTHROPIC_API_KEY="sk-fake",
            PATH=os.pathsep.join([str(Path(sys.executable).parent), path]),
        )
        env.pop(RUN_TOKEN_ENV, None)
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
        """``claude -p PROMPT --output-format json *extra_args`` in this harness.

        Raises ``ClaudeTimeout`` (after killing the run's process group) past ``timeout``.
        Processes the run leaves behind (async hooks) get ``background_timeout`` seconds
        to finish before they are killed.
        """
        args = [str(self.claude.executable), "-p", prompt, "--output-format", "json"]
        args.extend(extra_args)
        token = uuid.uuid4().hex
        first = len(self.server.requests)
        start = time.monotonic()
        proc = subprocess.Popen(
            args,
            cwd=self.cwd,
            env={**self.env(env), RUN_TOKEN_ENV: token},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        try:
            stdout, stderr = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_run(proc.pid, token)
            stdout, stderr = proc.communicate(timeout=30)
            _kill_run(proc.pid, token)
            raise ClaudeTimeout(
                f"claude did not finish within {timeout} s: {args[1:]!r}\n"
                f"stdout: {stdout[-1500:]!r}\nstderr: {stderr[-3000:]!r}"
            ) from None
        finally:
            if proc.poll() is None:
                _kill_run(proc.pid, token)
                proc.wait(timeout=30)
        _reap_run(proc.pid, token, self.background_timeout)
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

    def run_sessions(
        self,
        *prompts: str,
        args: Sequence[str] = (),
        env: Mapping[str, str | None] | None = None,
        timeout: float = 120,
    ) -> list[Result]:
        """One new session per prompt, in order, in the same HOME and project."""
        return [self.run(prompt, *args, env=env, timeout=timeout) for prompt in prompts]


def _run_processes(token: str) -> list[int]:
    """Processes carrying this run's token in their environment: Claude Code starts each
    hook in a process group of its own, and orphans lose their parent link, but all of
    them inherit the environment of the run."""
    needle = f"{RUN_TOKEN_ENV}={token}".encode()
    found = []
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    for name in entries:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as handle:
                environ = handle.read()
        except OSError:
            continue
        if needle in environ.split(b"\0"):
            found.append(int(name))
    return found


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _kill_run(pgid: int, token: str) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)
    for pid in _run_processes(token):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)


def _reap_run(pgid: int, token: str, grace: float) -> None:
    """Wait up to ``grace`` seconds for what a run left running (async hooks and their
    children), then kill it. A process group id cannot be reused while any member lives,
    and the token is unique to the run, so only the run's own processes are reached."""
    deadline = time.monotonic() + grace
    while _group_alive(pgid) or _run_processes(token):
        if time.monotonic() >= deadline:
            _kill_run(pgid, token)
            for _ in range(3):
                time.sleep(0.1)
                for pid in _run_processes(token):
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.kill(pid, signal.SIGKILL)
            return
        time.sleep(0.1)
