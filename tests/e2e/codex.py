"""The real Codex CLI, run offline against the in-process fake Responses API.

``install_codex`` installs ``@openai/codex`` from npm once into the e2e cache (npm.py).
``CodexHarness`` gives one test an isolated HOME (with ``CODEX_HOME`` in it), TMPDIR and git
project (runs.py), with the fake provider in ``config.toml``; ``run`` runs ``codex exec`` on a
prompt there and returns a ``Result`` with the requests that reached the fake model.
``install_mnemoweave`` runs ``mnemoweave install codex --trust`` in that HOME, as a user
would: hooks and MCP server merged, their trust recorded by Codex itself.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from . import daemons
from .fake_responses import ENDPOINT, FakeResponses, input_texts
from .fake_server import posted_bodies
from .npm import CliUnavailable, InstalledCli, NpmCli
from .runs import HostHarness, RunResult, RunTimeout

CODEX_PACKAGE = "@openai/codex"
CODEX_VERSION = "0.169.0"
OFFLINE_ENV = {"FAKE_API_KEY": "sk-fake"}
CONFIG = """model = "fake-model"
model_provider = "fake"
check_for_update_on_startup = false

[model_providers.fake]
name = "fake"
base_url = "{base_url}"
wire_api = "responses"
env_key = "FAKE_API_KEY"

[analytics]
enabled = false
"""

Codex = InstalledCli


class CodexUnavailable(CliUnavailable):
    """Codex cannot be run here (no node/npm, or no network and nothing cached)."""


class CodexTimeout(RunTimeout):
    """A ``codex exec`` outlived its timeout; it and its processes were killed."""


CODEX = NpmCli("Codex", CODEX_PACKAGE, "codex", "codex", OFFLINE_ENV, CodexUnavailable)


def install_codex(cache: Path | None = None, version: str = CODEX_VERSION) -> Codex:
    return CODEX.install(version, cache)


class Result(RunResult):
    """One ``codex exec``: exit code, output, and the requests the fake model received."""

    @property
    def reply(self) -> str:
        return self.stdout.strip()

    @property
    def bodies(self) -> list[dict[str, Any]]:
        return posted_bodies(self.requests, ENDPOINT)

    def texts(self, role: str) -> list[str]:
        """The message texts of one role in the run's last model request."""
        return input_texts(self.bodies[-1], role) if self.bodies else []

    @property
    def hook_lines(self) -> list[str]:
        """Codex's own report of each hook (`hook: Stop Completed`, `... Failed`)."""
        return [line for line in self.stderr.splitlines() if line.startswith("hook: ")]


class CodexHarness(HostHarness[Result]):
    """An isolated HOME, CODEX_HOME, TMPDIR and git project wired to ``server``."""

    command = "codex"
    dropped_env = ("CODEX", "OPENAI_", "MNEMOWEAVE_", "XDG_")
    offline_env = OFFLINE_ENV
    result_type = Result
    timeout_error = CodexTimeout
    tag_runs = True

    def __init__(
        self,
        codex: Codex,
        server: FakeResponses,
        root: Path,
        mnemoweave_home: Path,
        project: Path | None = None,
    ) -> None:
        self.codex = codex
        super().__init__(server, root, mnemoweave_home, project)
        self.codex_home.mkdir(parents=True, exist_ok=True)
        (self.codex_home / "config.toml").write_text(CONFIG.format(base_url=server.base_url))

    @property
    def codex_home(self) -> Path:
        return self.home / ".codex"

    @property
    def grace(self) -> float:
        return 10.0

    def host_env(self) -> dict[str, str]:
        return {"CODEX_HOME": str(self.codex_home)}

    def env(self, extra: Mapping[str, str | None] | None = None) -> dict[str, str]:
        env = super().env(extra)
        env["PATH"] = f"{self.codex.executable.parent}:{env['PATH']}"  # for `install --trust`
        return env

    def install_mnemoweave(self, *args: str) -> str:
        """`mnemoweave install codex --trust *args` as the user; its output."""
        done = daemons.mw(self.env(), "install", "codex", "--trust", *args, cwd=self.cwd)
        assert done.returncode == 0, done.stderr
        return done.stdout

    def argv(self, prompt: str, extra_args: Sequence[str]) -> list[str]:
        """``codex exec --skip-git-repo-check *extra_args PROMPT`` (stdin is empty)."""
        return [str(self.codex.executable), "exec", "--skip-git-repo-check", *extra_args, prompt]
