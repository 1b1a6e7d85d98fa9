"""`install cursor|claude-desktop|zed|windsurf`: our MCP server entry in each client's
documented settings file, merged with a backup first, idempotent, and removed alone."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from mnemoweave.cli.main import cli
from mnemoweave.errors import InvalidInput
from mnemoweave.hosts import jsonc, mcp_clients

ZED_SETTINGS = """// Zed settings
//
// For information on how to configure Zed, see the Zed
// documentation: https://zed.dev/docs/configuring-zed
{
  "theme": "One Dark", // my favourite
  "context_servers": {
    "github": {"command": "gh-mcp", "args": [],},
  },
  /* fonts */
  "buffer_font_size": 15,
}
"""


@pytest.fixture
def user_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "user"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    return home


def run(*args: str) -> str:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


EXPECTED = {
    "cursor": ".cursor/mcp.json",
    "claude-desktop": ".config/Claude/claude_desktop_config.json",
    "zed": ".config/zed/settings.json",
    "windsurf": ".codeium/windsurf/mcp_config.json",
}


@pytest.mark.parametrize("client", list(EXPECTED))
def test_each_client_gets_its_entry_in_its_documented_file_once(client, user_home, monkeypatch):
    monkeypatch.setattr(sys, "platform", "linux")
    path = user_home / EXPECTED[client]
    said = run("install", client)
    assert f"MCP server installed into {path}" in said and "memory_ingest" in said
    key = "context_servers" if client == "zed" else "mcpServers"
    server = json.loads(path.read_text())[key]["mnemoweave"]
    assert server["command"] == sys.executable and server["args"][:3] == ["-m", "mnemoweave", "mcp"]
    assert server["env"]["MNEMOWEAVE_HOME"]  # a desktop app passes on no shell environment
    assert ("--global" in server["args"]) == (client == "claude-desktop")
    before = path.read_text()
    assert "nothing to do" in run("install", client)
    assert path.read_text() == before
    run("uninstall", client)
    assert not path.exists()  # it held nothing else


def test_zed_settings_keep_their_comments_trailing_commas_and_other_servers(user_home):
    path = user_home / ".config" / "zed" / "settings.json"
    path.parent.mkdir(parents=True)
    path.write_text(ZED_SETTINGS)
    result = mcp_clients.install("zed")
    assert result["changed"] and Path(result["backup"]).read_text() == ZED_SETTINGS
    text = path.read_text()
    assert (
        text.startswith("// Zed settings") and "// my favourite" in text and "/* fonts */" in text
    )
    data = jsonc.value(text, jsonc.parse(text, path))
    assert set(data["context_servers"]) == {"github", "mnemoweave"}
    assert data["theme"] == "One Dark" and data["buffer_font_size"] == 15
    assert mcp_clients.install("zed")["changed"] is False
    assert mcp_clients.uninstall("zed")["changed"] is True
    assert path.read_text() == ZED_SETTINGS  # byte for byte
    assert mcp_clients.uninstall("zed")["changed"] is False


def test_plain_json_stays_plain_json_and_an_old_entry_is_replaced(user_home):
    path = user_home / ".cursor" / "mcp.json"
    path.parent.mkdir()
    old = {"command": "/old/python", "args": ["-m", "mnemoweave", "mcp"]}
    path.write_text(
        json.dumps({"mcpServers": {"other": {"command": "x"}, "mnemoweave": old}}, indent=2)
    )
    mcp_clients.install("cursor")
    data = json.loads(path.read_text())  # strict JSON still
    assert data["mcpServers"]["other"] == {"command": "x"}
    assert data["mcpServers"]["mnemoweave"]["command"] == sys.executable
    mcp_clients.uninstall("cursor")
    assert path.read_text() == json.dumps({"mcpServers": {"other": {"command": "x"}}}, indent=2)


def test_a_project_install_names_its_project(user_home, tmp_path):
    project = tmp_path / "repo"
    (project / ".git").mkdir(parents=True)
    result = mcp_clients.install("cursor", "project", cwd=project)
    path = project / ".cursor" / "mcp.json"
    assert result["settings"] == str(path)
    args = json.loads(path.read_text())["mcpServers"]["mnemoweave"]["args"]
    assert args[-2:] == ["--project", str(project)]
    with pytest.raises(InvalidInput, match="no project settings"):
        mcp_clients.install("windsurf", "project", cwd=project)


@pytest.mark.parametrize(
    "text",
    ['{"mcpServers": ', '{"mcpServers": []}', "[1, 2]", '{"a": 1} {"b": 2}', "{'a': 1}"],
)
def test_a_broken_file_is_refused_and_left_as_it_was(user_home, text):
    path = user_home / ".codeium" / "windsurf" / "mcp_config.json"
    path.parent.mkdir(parents=True)
    path.write_text(text)
    with pytest.raises(InvalidInput, match=str(path)):
        mcp_clients.install("windsurf")
    assert path.read_text() == text
