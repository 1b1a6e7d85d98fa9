"""The Claude Code plugin installed the way users install it: this repository added as a
marketplace (`claude plugin marketplace add`) from a fresh clone, the plugin installed with
`claude plugin install`. Claude Code copies the plugin into its cache, away from any
checkout: its hooks and MCP server find the program that `mnemoweave install` recorded
(as ./setup.sh leaves it), or, with none, the first session is told how to install it."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from bundle_copy import ROOT, copy_worktree, run

from .claude import ClaudeHarness
from .daemons import start_daemon, stored_turns, wait_for
from .test_claude_mcp import CONNECT, PREFIX, mcp_log, mw, stop_daemon

FACT = "The staging database is called pg-stage-7."
ASKED = "What is the staging database called?"
CACHE = Path(".claude/plugins/cache/mnemoweave/mnemoweave")


def no_program_path() -> str:
    """PATH without any folder that holds a `mnemoweave` executable."""
    folders = os.environ.get("PATH", os.defpath).split(os.pathsep)
    return os.pathsep.join(
        f for f in folders if f and not os.access(Path(f, "mnemoweave"), os.X_OK)
    )


def installed_from_a_clone(claude: ClaudeHarness, tmp_path: Path) -> Path:
    """A fresh clone added as a marketplace and the plugin installed from it: the clone."""
    clone = tmp_path / "clone"
    run(["git", "clone", "--quiet", ROOT, clone], tmp_path)
    copy_worktree(clone)  # with the uncommitted edits
    env = claude.env({"PATH": no_program_path()})
    executable = str(claude.claude.executable)
    added = run([executable, "plugin", "marketplace", "add", clone], claude.cwd, env)
    assert "Successfully added marketplace: mnemoweave" in added.stdout, added.stdout
    done = run([executable, "plugin", "install", "mnemoweave@mnemoweave"], claude.cwd, env)
    assert "Successfully installed plugin: mnemoweave@mnemoweave" in done.stdout, done.stdout
    (copy,) = (claude.home / CACHE).iterdir()
    assert (copy / "scripts" / "mnemoweave").exists() and not (copy / ".venv").exists()
    return clone


def test_the_plugin_from_the_marketplace_remembers_and_weaves(claude, fake_anthropic, tmp_path):
    installed_from_a_clone(claude, tmp_path)
    recorded = subprocess.run(  # what ./setup.sh runs
        [str(ROOT / ".venv" / "bin" / "mnemoweave"), "install"],
        env=claude.env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert recorded.returncode == 0, recorded.stderr
    assert mw(claude, "remember", FACT, "--kind", "fact").returncode == 0
    fake_anthropic.reply = "pg-stage-7."
    env = CONNECT | {"PATH": no_program_path()}
    try:
        # a daemon that outlives the runs (one a hook starts is the run's: the harness ends
        # it with the run, so the next run's prompt would find one warming up)
        start_daemon(claude.env(), claude.root / "daemon.out")
        first = claude.run("Say hello.", env=env, timeout=180)
        assert first.rc == 0 and first.reply, first
        assert "Long-term memory for this user and project" in first.model_text  # the brief
        offered = {t["name"] for body in first.bodies for t in body.get("tools") or []}
        assert PREFIX + "memory_search" in offered, mcp_log(claude)  # the MCP tools
        asked = claude.run(ASKED, env=env, timeout=180)
        assert asked.rc == 0, asked
        assert FACT in asked.injected_text, asked.injected_text  # woven for the prompt
        both = {("user", ASKED), ("assistant", "pg-stage-7.")}
        wait_for(lambda: both <= set(stored_turns(claude.env(), str(asked.session_id))))
    finally:
        stop_daemon(claude)
    for result in (first, asked):
        assert result.json and result.json["is_error"] is False and not result.stderr, result


def test_with_no_program_the_first_session_is_told_how_to_install_it(claude, tmp_path):
    clone = installed_from_a_clone(claude, tmp_path)
    env = {"PATH": no_program_path()}
    told = f"run {clone}/setup.sh (or: uv tool install {clone})"
    first = claude.run("Say hello.", env=env, timeout=180)
    assert first.rc == 0 and first.reply, first
    assert told in first.model_text, first.model_text[-3000:]
    assert first.json and first.json["is_error"] is False and not first.stderr, first
    again = claude.run("Say hello.", env=env, timeout=180)
    assert again.rc == 0 and again.reply, again
    assert "program is not installed" not in again.model_text  # said once
    assert told in (claude.mnemoweave_home / "logs" / "hooks.log").read_text()
