"""The real OpenCode CLI, run offline against the in-process fake OpenAI-compatible server.

``install_opencode`` installs ``opencode-ai`` from npm once into the e2e cache directory
(see npm.py; the same one Claude Code's install uses), as ``opencode-<version>``.
``OpenCodeHarness`` gives one test an isolated HOME, XDG directories, TMPDIR and git project
(see runs.py), with the fake provider declared in the user's ``opencode.json`` and the npm
installs OpenCode would start seeded, so it never waits on the network; ``run`` runs
``opencode run --format json -m fake/fake-model`` there and returns a ``Result`` with the
requests that reached the fake model during the run. ``use_plugin`` links
``plugins/opencode/mnemoweave.js`` into the project's ``.opencode/plugin/``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from .fake_openai import FakeOpenAI, completion_bodies, content_text
from .npm import REPO_ROOT, CliUnavailable, InstalledCli, NpmCli
from .runs import HostHarness, RunResult, RunTimeout

OPENCODE_PACKAGE = "opencode-ai"
OPENCODE_VERSION = "1.18.33"
PLUGIN = REPO_ROOT / "plugins" / "opencode" / "mnemoweave.js"
MODEL = "fake/fake-model"
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

OpenCode = InstalledCli


class OpenCodeUnavailable(CliUnavailable):
    """OpenCode cannot be run here (no node/npm, or no network and nothing cached)."""


class OpenCodeTimeout(RunTimeout):
    """An ``opencode run`` outlived its timeout; it and its process group were killed."""


OPENCODE = NpmCli(
    "OpenCode", OPENCODE_PACKAGE, "opencode", "opencode", OFFLINE_ENV, OpenCodeUnavailable
)


def install_opencode(cache: Path | None = None, version: str = OPENCODE_VERSION) -> OpenCode:
    """The pinned OpenCode from the cache, installing it on first use (see
    ``NpmCli.install``)."""
    return OPENCODE.install(version, cache)


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


class Result(RunResult):
    """One ``opencode run``: exit code, output, and the requests the fake model received."""

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


def user_text(requests: Iterable[Mapping[str, Any]]) -> str:
    return "\n".join(
        content_text(m.get("content"))
        for body in completion_bodies(list(requests))
        for m in body.get("messages") or []
        if isinstance(m, dict) and m.get("role") == "user"
    )


class OpenCodeHarness(HostHarness[Result]):
    """An isolated HOME, XDG tree and git project for running the real CLI against
    ``server``. Runs in one harness share them, so later runs see what earlier ones left.
    The environment of a run is the caller's minus OpenCode/mnemoweave/XDG/provider
    settings, with PWD the project (OpenCode takes its directory from PWD). What a run
    leaves in its process group gets REAP_GRACE seconds; the daemon a plugin starts runs
    in a session of its own and is not touched."""

    command = "opencode"
    dropped_env = ("OPENCODE", "MNEMOWEAVE_", "XDG_", "OPENAI_", "ANTHROPIC_", "CLAUDE")
    offline_env = OFFLINE_ENV
    result_type = Result
    timeout_error = OpenCodeTimeout
    grace = REAP_GRACE

    def __init__(
        self,
        opencode: OpenCode,
        server: FakeOpenAI,
        root: Path,
        mnemoweave_home: Path,
        project: Path | None = None,
    ) -> None:
        self.opencode = opencode
        self.xdg = root / "xdg"
        super().__init__(server, root, mnemoweave_home, project)
        for directory in self.xdg_homes().values():
            directory.mkdir(parents=True, exist_ok=True)
        self.config_dir.mkdir(parents=True, exist_ok=True)
        self.write_config()
        seed_offline(self.config_dir, self.cwd / ".opencode")

    def xdg_homes(self) -> dict[str, Path]:
        return {name.upper(): self.xdg / name for name in ("config", "data", "cache", "state")}

    def host_env(self) -> dict[str, str]:
        return {"PWD": str(self.cwd)}

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

    def argv(self, prompt: str, extra_args: Sequence[str]) -> list[str]:
        """``opencode run --format json -m fake/fake-model *extra_args WORDS...``: the
        prompt goes as separate words (OpenCode quotes an argument that holds spaces). A run
        past its timeout raises ``OpenCodeTimeout`` after its process group is killed."""
        args = [str(self.opencode.executable), "run", "--format", "json", "-m", MODEL]
        return [*args, *extra_args, *prompt.split()]
