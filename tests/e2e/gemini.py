"""The real Gemini CLI, run offline against the in-process fake Gemini API.

``install_gemini`` installs ``@google/gemini-cli`` from npm once into the e2e cache
(npm.py). ``GeminiHarness`` gives one test an isolated HOME, TMPDIR and git project
(runs.py), with API-key auth, no telemetry and no updates in ``~/.gemini/settings.json`` and
the workspace trusted; ``run`` runs ``gemini -p PROMPT`` there and returns a ``Result`` with
the requests that reached the fake model. ``install_mnemoweave`` runs ``mnemoweave install
gemini`` in that HOME, as a user would.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from . import daemons
from .fake_gemini import FakeGemini, contents_text
from .npm import CliUnavailable, InstalledCli, NpmCli
from .runs import HostHarness, RunResult, RunTimeout

GEMINI_PACKAGE = "@google/gemini-cli"
GEMINI_VERSION = "0.61.0"
OFFLINE_ENV = {
    "GEMINI_API_KEY": "fake-key",
    "GEMINI_CLI_TRUST_WORKSPACE": "true",
    "NO_BROWSER": "1",
}
SETTINGS = {
    "security": {"auth": {"selectedType": "gemini-api-key"}},
    "privacy": {"usageStatisticsEnabled": False},
    "telemetry": {"enabled": False},
    "general": {"disableAutoUpdate": True, "disableUpdateNag": True},
}

Gemini = InstalledCli


class GeminiUnavailable(CliUnavailable):
    """Gemini cannot be run here (no node/npm, or no network and nothing cached)."""


class GeminiTimeout(RunTimeout):
    """A ``gemini -p`` outlived its timeout; it and its processes were killed."""


GEMINI = NpmCli("Gemini", GEMINI_PACKAGE, "gemini", "gemini", OFFLINE_ENV, GeminiUnavailable)


def install_gemini(cache: Path | None = None, version: str = GEMINI_VERSION) -> Gemini:
    return GEMINI.install(version, cache)


class Result(RunResult):
    """One ``gemini -p``: exit code, output, and the requests the fake model received."""

    @property
    def reply(self) -> str:
        return self.stdout.strip()

    @property
    def turns(self) -> list[dict[str, Any]]:
        """The main turns' request bodies (not the router's)."""
        return [
            r["body"]
            for r in self.requests
            if str(r.get("path", "")).split("?")[0].endswith(":streamGenerateContent")
            and isinstance(r.get("body"), dict)
        ]

    @property
    def model_text(self) -> str:
        """Every text part of the last main turn's request."""
        return contents_text(self.turns[-1]) if self.turns else ""


class GeminiHarness(HostHarness[Result]):
    """An isolated HOME, TMPDIR and git project wired to ``server``."""

    command = "gemini"
    dropped_env = ("GEMINI", "GOOGLE_", "MNEMOWEAVE_", "XDG_")
    offline_env = OFFLINE_ENV
    result_type = Result
    timeout_error = GeminiTimeout
    tag_runs = True

    def __init__(
        self,
        gemini: Gemini,
        server: FakeGemini,
        root: Path,
        mnemoweave_home: Path,
        project: Path | None = None,
    ) -> None:
        self.gemini = gemini
        super().__init__(server, root, mnemoweave_home, project)
        self.settings_path.parent.mkdir(parents=True, exist_ok=True)
        self.settings_path.write_text(json.dumps(SETTINGS, indent=2))

    @property
    def settings_path(self) -> Path:
        return self.home / ".gemini" / "settings.json"

    @property
    def grace(self) -> float:
        return 10.0

    def host_env(self) -> dict[str, str]:
        return {"GOOGLE_GEMINI_BASE_URL": self.server.base_url}

    def install_mnemoweave(self, *args: str) -> str:
        """`mnemoweave install gemini *args` as the user; its output."""
        done = daemons.mw(self.env(), "install", "gemini", *args, cwd=self.cwd)
        assert done.returncode == 0, done.stderr
        return done.stdout

    def argv(self, prompt: str, extra_args: Sequence[str]) -> list[str]:
        """``gemini -p PROMPT *extra_args`` (stdin is empty)."""
        return [str(self.gemini.executable), "-p", prompt, *extra_args]
