"""SKILL.md: short enough for an agent's rules, bilingual headings, Claude Code frontmatter,
names only real tools, and ships unchanged in the Claude Code plugin with the MCP server."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

from mnemoweave.mcp.server import DESCRIPTIONS
from mnemoweave.recall.weave import OPEN

ROOT = Path(__file__).resolve().parents[2]
SKILL = (ROOT / "SKILL.md").read_text(encoding="utf-8")
PLUGIN = ROOT / "plugins" / "claude-code"
MAX_WORDS = 1500  # words, each CJK character counted as one
MAX_CHARS = 10000
CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")


def frontmatter() -> dict[str, str]:
    assert SKILL.startswith("---\n")
    head = SKILL.split("---\n")[1]
    return dict(line.split(": ", 1) for line in head.splitlines() if line.strip())


def test_skill_is_short_enough_for_an_agent_s_rules():
    words = len(CJK.sub(" ", SKILL).split()) + len(CJK.findall(SKILL))
    assert words <= MAX_WORDS and len(SKILL) <= MAX_CHARS, (words, len(SKILL))


def test_skill_has_claude_code_frontmatter():
    meta = frontmatter()
    assert meta.keys() == {"name", "description"}
    assert re.fullmatch(r"[a-z0-9-]{1,64}", meta["name"]) and meta["name"] == "mnemoweave"
    assert 50 <= len(meta["description"]) <= 1024


def test_headings_are_bilingual():
    prose = re.sub(r"```.*?```", "", SKILL, flags=re.DOTALL)
    headings = [line for line in prose.splitlines() if line.startswith("#")]
    assert len(headings) >= 5
    for heading in headings:
        english, _, chinese = heading.partition(" / ")
        assert re.search(r"[A-Za-z]", english) and CJK.search(chinese), heading


def test_skill_names_only_real_tools_and_the_real_note():
    named = set(re.findall(r"\bmemory_[a-z]+\b", SKILL))
    assert named and named <= DESCRIPTIONS.keys(), named - DESCRIPTIONS.keys()
    assert {"memory_search", "memory_remember", "memory_pending", "memory_review"} <= named
    assert OPEN in SKILL  # the block the agent is taught about is the one the weave opens


def test_the_plugin_ships_the_skill_unchanged():
    shipped = PLUGIN / "skills" / "mnemoweave" / "SKILL.md"
    assert shipped.read_bytes() == (ROOT / "SKILL.md").read_bytes()


def test_the_plugin_declares_the_mcp_server_without_path():
    servers = json.loads((PLUGIN / ".mcp.json").read_text(encoding="utf-8"))["mcpServers"]
    assert list(servers) == ["mnemoweave"]
    command = servers["mnemoweave"]["command"]
    assert command.startswith("${CLAUDE_PLUGIN_ROOT}/")
    launcher = Path(command.replace("${CLAUDE_PLUGIN_ROOT}", str(PLUGIN))).resolve()
    assert launcher == PLUGIN / "scripts" / "mnemoweave" and os.access(launcher, os.X_OK)
    assert servers["mnemoweave"]["args"] == ["mcp"]


def test_the_launcher_runs_mnemoweave_bin_when_set(tmp_path):
    fake = tmp_path / "mnemoweave"
    fake.write_text('#!/bin/sh\necho "fake $*"\n', encoding="utf-8")
    fake.chmod(0o755)
    out = subprocess.run(
        [str(PLUGIN / "scripts" / "mnemoweave"), "mcp", "--project", "p"],
        env={"PATH": "/usr/bin:/bin", "MNEMOWEAVE_BIN": str(fake)},
        capture_output=True,
        text=True,
        timeout=30,
        stdin=subprocess.DEVNULL,
    )
    assert (out.returncode, out.stdout) == (0, "fake mcp --project p\n"), out.stderr
