"""The Claude Code plugin brings the MCP server and the skill: in the real CLI the model sees
the memory_* tools and the mnemoweave skill, and a tool call reaches the store."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path
from typing import Any

from mnemoweave.hosts import client

from . import daemons

ROOT = Path(__file__).resolve().parents[2]
PLUGIN = ROOT / "plugins" / "claude-code"
# Claude Code names a plugin's MCP tools mcp__plugin_<plugin>_<server>__<tool>
PREFIX = "mcp__plugin_mnemoweave_mnemoweave__"
SEARCH, REMEMBER = PREFIX + "memory_search", PREFIX + "memory_remember"
SEEDED = "Release notes are written in both English and 中文."
LEARNED = "The CI cache key includes the lockfile hash."
# `claude -p` waits MCP_CONNECT_TIMEOUT_MS (default 5 s) for MCP servers before its first
# request; importing the MCP SDK alone can take seconds on a loaded machine.
CONNECT = {"MCP_CONNECT_TIMEOUT_MS": "60000"}


def mw(claude, *args: str) -> subprocess.CompletedProcess[str]:
    return daemons.mw(claude.env(), *args, cwd=claude.cwd)  # in Claude's project


def stop_daemon(claude) -> None:
    mw(claude, "stop")
    holder = client.lock_holder(claude.mnemoweave_home)
    if holder and holder[1] == client.DAEMON_ROLE and holder[0]:
        os.kill(holder[0], signal.SIGKILL)


def tool_results(bodies: list[dict[str, Any]]) -> dict[str, str]:
    """Tool name -> the text of its result, from the conversation the model was sent."""
    names, results = {}, {}
    for body in bodies:
        for message in body.get("messages") or []:
            content = message.get("content")
            for block in content if isinstance(content, list) else []:
                if block.get("type") == "tool_use":
                    names[block["id"]] = block["name"]
                elif block.get("type") == "tool_result":
                    inner = block.get("content")
                    text = (
                        inner
                        if isinstance(inner, str)
                        else "".join(
                            part.get("text", "") for part in inner or [] if isinstance(part, dict)
                        )
                    )
                    results[names.get(block["tool_use_id"], "?")] = text
    return results


def script(body: dict[str, Any]) -> dict[str, Any] | None:
    """The fake model: search memory, then remember something, then answer."""
    offered = {tool.get("name") for tool in body.get("tools") or []}
    if SEARCH not in offered:
        return None
    done = sum(
        1
        for message in body.get("messages") or []
        if isinstance(message.get("content"), list)
        for block in message["content"]
        if block.get("type") == "tool_result"
    )
    if done == 0:
        return {"name": SEARCH, "input": {"query": "release notes language", "scope": "all"}}
    if done == 1:
        return {"name": REMEMBER, "input": {"text": LEARNED, "kind": "fact"}}
    return None


def mcp_log(claude) -> str:
    """What Claude Code logged about our server (for failure messages)."""
    logs = (claude.home / ".cache").glob("claude-cli-nodejs/*/mcp-logs-*/*.jsonl")
    return "\n".join(path.read_text(encoding="utf-8")[-3000:] for path in logs) or "no MCP log"


def skill_description() -> str:
    front = (ROOT / "SKILL.md").read_text(encoding="utf-8").split("---")[1]
    return next(line for line in front.splitlines() if line.startswith("description:"))[13:]


def test_the_plugin_brings_the_tools_and_the_skill(claude, fake_anthropic):
    seeded = mw(claude, "remember", SEEDED, "--kind", "pref")
    assert seeded.returncode == 0, seeded.stderr
    fake_anthropic.tool_use = script
    fake_anthropic.reply = "Done."
    try:
        result = claude.run(
            "What language are release notes written in? Also note the CI cache key.",
            "--plugin-dir",
            str(PLUGIN),
            "--allowedTools",
            f"{SEARCH} {REMEMBER}",
            env=CONNECT,
            timeout=180,
        )
        assert result.rc == 0, result
        assert result.reply == "Done.", result
        offered = {t["name"] for body in result.bodies for t in body.get("tools") or []}
        ours = {name for name in offered if name.startswith(PREFIX)}
        assert SEARCH in ours and REMEMBER in ours and len(ours) <= 12, mcp_log(claude)
        results = tool_results(result.bodies)
        assert SEEDED in results[SEARCH], results
        assert results[REMEMBER] == "new m_2", results
        text = result.model_text
        assert "mnemoweave:mnemoweave" in text  # the plugin's skill, listed to the model
        assert skill_description()[:80] in text
        listed = json.loads(mw(claude, "list", "--json").stdout)["memories"]
        learned = next(m for m in listed if m["id"] == "m_2")
        assert learned["body"] == LEARNED
        assert learned["project"] == str(claude.cwd)  # the server's scope: the session's repo
    finally:
        stop_daemon(claude)


def test_a_continued_session_never_finds_the_server_disconnected(claude):
    """Three prompts, the last two with `--continue`, at Claude Code's own MCP wait: the
    server is up at every start, so the model is never told it disconnected (what Claude
    Code says when a continued conversation's server has not connected yet)."""
    said = []
    try:
        for extra in ((), ("--continue",), ("--continue",)):
            result = claude.run("Say hello.", "--plugin-dir", str(PLUGIN), *extra, timeout=180)
            assert result.rc == 0 and result.reply, result
            said.append(result)
    finally:
        stop_daemon(claude)
    for result in said:
        shown = result.stdout + result.stderr + result.model_text
        assert "have disconnected" not in shown and "disconnected" not in result.stderr
        assert "Long-term memory for this user and project" in result.model_text, mcp_log(claude)
