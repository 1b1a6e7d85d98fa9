"""Fixtures for end-to-end tests against the real Claude Code, OpenCode, Codex and Gemini
CLIs and fake model servers (``codex`` and ``gemini`` are harnesses like ``opencode``, each
with its own fake server, over a lexical data dir).

``claude`` is the harness of one test (isolated HOME, TMPDIR, MNEMOWEAVE_HOME and git
project), ``run_claude`` its ``run`` method, ``fake_anthropic`` the model server it talks
to, ``claude_code`` the installed CLI. For example::

    def test_example(claude, fake_anthropic):
        fake_anthropic.reply = "PONG"
        result = claude.run("hello", "--allowedTools", "Bash(echo:*)")
        assert result.rc == 0, result
        assert result.reply == "PONG" and "hello" in result.model_text

``opencode`` is the same for OpenCode (isolated HOME, XDG dirs, TMPDIR, MNEMOWEAVE_HOME and
git project; ``opencode.use_plugin()`` links the mnemoweave plugin in), ``fake_openai`` its
model server, ``opencode_cli`` the installed CLI. Every daemon of the test's data dir is
stopped when an ``opencode`` test ends.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import pytest

from .claude import ClaudeCode, ClaudeHarness, Result, install_claude_code
from .codex import Codex, CodexHarness, install_codex
from .daemons import stop_daemons, write_config
from .fake_anthropic import FakeAnthropic
from .fake_gemini import FakeGemini
from .fake_openai import FakeOpenAI
from .fake_responses import FakeResponses
from .gemini import Gemini, GeminiHarness, install_gemini
from .npm import CliUnavailable, InstalledCli
from .opencode import OpenCode, OpenCodeHarness, install_opencode

HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if item.path.is_relative_to(HERE):
            item.add_marker(pytest.mark.e2e)


def _installed_or_skip(install: Callable[[], InstalledCli], title: str) -> InstalledCli:
    try:
        return install()
    except CliUnavailable as exc:
        pytest.skip(f"{title} unavailable: {exc}")


@pytest.fixture(scope="session")
def claude_code() -> ClaudeCode:
    """The pinned Claude Code CLI, installed once into the e2e cache."""
    return _installed_or_skip(install_claude_code, "Claude Code")


@pytest.fixture
def fake_anthropic() -> Iterator[FakeAnthropic]:
    """A fake Anthropic API on 127.0.0.1 for this test; ``.requests`` records every call."""
    with FakeAnthropic() as server:
        yield server


@pytest.fixture
def claude(
    claude_code: ClaudeCode,
    fake_anthropic: FakeAnthropic,
    tmp_path: Path,
    mnemoweave_home: Path,
) -> Iterator[ClaudeHarness]:
    """An isolated HOME + git project wired to ``fake_anthropic``; ``claude.run(...)``."""
    harness = ClaudeHarness(claude_code, fake_anthropic, tmp_path / "claude", mnemoweave_home)
    harness.seed_shared_cache()
    yield harness


@pytest.fixture
def run_claude(claude: ClaudeHarness) -> Callable[..., Result]:
    """``run_claude(prompt, *extra_args, env=None, timeout=120) -> Result``."""
    return claude.run


@pytest.fixture(scope="session")
def opencode_cli() -> OpenCode:
    """The pinned OpenCode CLI, installed once into the e2e cache."""
    return _installed_or_skip(install_opencode, "OpenCode")


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAI]:
    """A fake OpenAI-compatible API on 127.0.0.1 for this test; ``.requests`` records calls."""
    with FakeOpenAI() as server:
        yield server


@pytest.fixture
def opencode(
    opencode_cli: OpenCode,
    fake_openai: FakeOpenAI,
    tmp_path: Path,
    mnemoweave_home: Path,
) -> Iterator[OpenCodeHarness]:
    """An isolated HOME, XDG tree + git project wired to ``fake_openai``; ``opencode.run``."""
    harness = OpenCodeHarness(opencode_cli, fake_openai, tmp_path / "oc", mnemoweave_home)
    harness.seed_shared_cache()
    try:
        yield harness
    finally:
        stop_daemons(mnemoweave_home)


@pytest.fixture(scope="session")
def codex_cli() -> Codex:
    """The pinned Codex CLI, installed once into the e2e cache."""
    return _installed_or_skip(install_codex, "Codex")


@pytest.fixture(scope="session")
def gemini_cli() -> Gemini:
    """The pinned Gemini CLI, installed once into the e2e cache."""
    return _installed_or_skip(install_gemini, "Gemini")


@pytest.fixture
def codex(codex_cli: Codex, tmp_path: Path, mnemoweave_home: Path) -> Iterator[CodexHarness]:
    """An isolated HOME and CODEX_HOME + git project wired to a fake Responses API, over a
    lexical data dir; ``codex.run(prompt)``."""
    with FakeResponses() as server:
        yield from _lexical(CodexHarness(codex_cli, server, tmp_path / "codex", mnemoweave_home))


@pytest.fixture
def gemini(gemini_cli: Gemini, tmp_path: Path, mnemoweave_home: Path) -> Iterator[GeminiHarness]:
    """An isolated HOME + git project wired to a fake Gemini API, over a lexical data dir;
    ``gemini.run(prompt)``."""
    with FakeGemini() as server:
        yield from _lexical(GeminiHarness(gemini_cli, server, tmp_path / "gemini", mnemoweave_home))


H = TypeVar("H", CodexHarness, GeminiHarness)


def _lexical(harness: H) -> Iterator[H]:
    """The harness over a lexical data dir with the shared tables seeded; every daemon of
    the data dir is stopped when the test ends."""
    write_config(harness.mnemoweave_home)
    harness.seed_shared_cache()
    try:
        yield harness
    finally:
        stop_daemons(harness.mnemoweave_home)
