"""mnemoweave inside the real Codex and Gemini CLIs, installed as their users install it:
both sides of an exchange kept, the brief and the prompt's weave in the model's request,
no failure of ours breaking a session or looping it, and one memory across hosts."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path

import pytest

from . import daemons
from .codex import CodexHarness
from .fake_gemini import FakeGemini
from .gemini import GeminiHarness

REMEMBERED = ("以后代码注释都用英文", "The upload client retries 3 times with exponential backoff")


def mw(harness, *args: str) -> str:
    done = daemons.mw(harness.env(), *args, cwd=harness.cwd)
    assert done.returncode == 0, done.stderr
    return done.stdout


def turns(harness) -> list[tuple[str, str, str]]:
    with closing(sqlite3.connect(harness.mnemoweave_home / "mnemoweave.sqlite")) as db:
        return db.execute("SELECT role, text, host FROM turns ORDER BY id").fetchall()


def prepared(harness) -> None:
    """Installed, with a preference and a fact of the project remembered and a daemon up."""
    harness.install_mnemoweave()
    mw(harness, "remember", REMEMBERED[0], "--kind", "pref")
    mw(harness, "remember", REMEMBERED[1])
    daemons.start_daemon(harness.env(), harness.root / "daemon.out")


def test_codex_gets_the_brief_and_the_weave_and_both_sides_are_kept(codex: CodexHarness):
    prepared(codex)
    result = codex.run("How often does the upload client retry?")
    assert result.rc == 0 and result.reply == "OK-FAKE", result
    assert len(result.bodies) == 1  # one request: nothing looped
    developer = "\n".join(result.texts("developer"))
    assert REMEMBERED[0] in developer and REMEMBERED[1] in developer  # brief, then the weave
    assert result.texts("user")[-1] == "How often does the upload client retry?"
    assert not [line for line in result.hook_lines if "Failed" in line], result
    assert daemons.wait_for(lambda: len(turns(codex)) == 2)
    assert turns(codex) == [
        ("user", "How often does the upload client retry?", "codex"),
        ("assistant", "OK-FAKE", "codex"),
    ]


def test_gemini_gets_the_brief_and_the_weave_and_both_sides_are_kept(gemini: GeminiHarness):
    prepared(gemini)
    result = gemini.run("How often does the upload client retry?")
    assert result.rc == 0 and "OK-FAKE" in result.reply, result
    assert len(result.turns) == 1  # one main turn: nothing looped
    text = result.model_text
    assert REMEMBERED[0] in text and REMEMBERED[1] in text
    assert "<hook_context>" in text  # where Gemini puts what a hook adds
    assert daemons.wait_for(lambda: len(turns(gemini)) == 2)
    assert turns(gemini) == [  # what the user said, not the context Gemini hands back
        ("user", "How often does the upload client retry?", "gemini"),
        ("assistant", "OK-FAKE", "gemini"),
    ]


@pytest.mark.parametrize("host", ["codex", "gemini"])
def test_a_broken_store_and_no_daemon_break_no_session_and_loop_none(host, request):
    harness = request.getfixturevalue(host)
    harness.install_mnemoweave()
    (harness.mnemoweave_home / "mnemoweave.sqlite").write_bytes(b"not a database" * 100)
    result = harness.run("Say hello.", timeout=90)
    assert result.rc == 0 and "OK-FAKE" in result.reply, result
    if host == "codex":
        assert len(result.bodies) == 1 and result.texts("user")[-1] == "Say hello."
        assert not [line for line in result.hook_lines if "Failed" in line], result
    else:
        assert len(result.turns) == 1 and "Say hello." in result.model_text
        assert "Hook" not in result.stderr or "Warning" not in result.stderr, result
    log = (harness.mnemoweave_home / "logs" / "hooks.log").read_text()
    assert f"{host} SessionStart" in log  # failed open, and said why


def test_a_decision_in_codex_reaches_gemini_and_one_in_gemini_reaches_codex(
    codex: CodexHarness, gemini_cli, tmp_path
):
    with FakeGemini() as server:
        gemini = GeminiHarness(
            gemini_cli, server, tmp_path / "gemini", codex.mnemoweave_home, codex.cwd
        )
        gemini.seed_shared_cache()
        codex.install_mnemoweave()
        gemini.install_mnemoweave()
        daemons.start_daemon(codex.env(), codex.root / "daemon.out")
        said = codex.run("From now on we always deploy with ArgoCD, never with kubectl apply.")
        told = gemini.run("我们决定：所有服务的日志一律用 zap，不要再用 logrus。")
        assert said.rc == 0 and told.rc == 0, (said, told)

        def two_cards() -> list[dict[str, str]]:  # one decision from each host, distilled
            cards = json.loads(mw(codex, "pending", "--json"))["cards"]
            return cards if len(cards) >= 2 else []

        for card in daemons.wait_for(two_cards):
            mw(codex, "review", card["id"], "accept")
        asked = gemini.run("How do we deploy this service?")
        assert "ArgoCD" in asked.model_text, asked
        answered = codex.run("用什么日志库？")
        assert "zap" in "\n".join(answered.texts("developer")), answered
    hosts = {host for _, _, host in turns(codex)}
    assert hosts == {"codex", "gemini"}
    shown = mw(codex, "status")
    assert "codex" in shown and "gemini" in shown  # where the turns came from


ROOT = Path(__file__).resolve().parents[2]


def on_path(harness) -> dict[str, str]:
    """The run's environment with this checkout's `mnemoweave` first on PATH (what the
    plugin and the extension run, as setup.sh or `uv tool install` leave it)."""
    env = harness.env()
    return {"PATH": f"{Path(sys.executable).parent}:{env['PATH']}"}


def test_the_codex_plugin_installs_from_the_marketplace_with_codexs_own_commands(codex):
    env = codex.env(on_path(codex))
    for command in (
        ["plugin", "marketplace", "add", str(ROOT)],
        ["plugin", "add", "mnemoweave@mnemoweave"],
    ):
        done = subprocess.run(
            [str(codex.codex.executable), *command],
            env=env,
            cwd=codex.cwd,
            capture_output=True,
            text=True,
            timeout=120,
            stdin=subprocess.DEVNULL,
        )
        assert done.returncode == 0, done.stderr
    mw(codex, "remember", REMEMBERED[1])
    daemons.start_daemon(codex.env(), codex.root / "daemon.out")
    # a plugin's hooks need the user's trust too; a run may grant it, as here
    result = codex.run(
        "How often does the upload client retry?",
        "--dangerously-bypass-hook-trust",
        env=on_path(codex),
    )
    assert result.rc == 0, result
    assert REMEMBERED[1] in "\n".join(result.texts("developer"))
    tools = [t.get("name") or t.get("type") for t in result.bodies[-1].get("tools", [])]
    assert "mcp__mnemoweave" in tools  # the plugin's MCP server, offered to the model


def test_the_gemini_extension_installs_with_geminis_own_command(gemini):
    env = gemini.env(on_path(gemini))
    done = subprocess.run(
        [
            str(gemini.gemini.executable),
            "extensions",
            "install",
            str(ROOT / "plugins" / "gemini"),
            "--consent",
        ],
        env=env,
        cwd=gemini.cwd,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0 and "installed successfully" in done.stdout + done.stderr, done
    mw(gemini, "remember", REMEMBERED[1])
    daemons.start_daemon(gemini.env(), gemini.root / "daemon.out")
    result = gemini.run(
        "How often does the upload client retry?",
        "--allowed-mcp-server-names",
        "mnemoweave",
        env=on_path(gemini),
    )
    assert result.rc == 0, result
    assert REMEMBERED[1] in result.model_text
    offered = [
        declaration.get("name")
        for tool in result.turns[-1].get("tools", [])
        for declaration in (tool or {}).get("functionDeclarations") or []
    ]
    assert "mcp_mnemoweave_memory_search" in offered
