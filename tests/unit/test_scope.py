"""One scope rule at every entry point: the project of the working directory by default,
--global for the global scope, --project for a path (`.` too) or a key; the weave's tiers
share it."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import anyio
import pytest
from click.testing import CliRunner

from mnemoweave.cli.main import cli
from mnemoweave.errors import InvalidInput
from mnemoweave.hosts import claude_code, dsh, opencode
from mnemoweave.projects import repository_key
from mnemoweave.scope import resolve_scope

ROOT = Path(__file__).parents[2]
KEY = "example.com/org/app"


@pytest.fixture
def repo(tmp_path, monkeypatch):
    """A checkout of org/app (with a subdirectory), as the working directory; git with a
    HOME of its own and no system config."""
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    path = tmp_path / "app"
    (path / "src").mkdir(parents=True)
    for args in (["init", "-q"], ["remote", "add", "origin", "git@example.com:org/app.git"]):
        subprocess.run(["git", *args], cwd=path, check=True, capture_output=True, timeout=30)
    (tmp_path / "other").mkdir()
    monkeypatch.chdir(path / "src")
    repository_key.cache_clear()
    yield path
    repository_key.cache_clear()


def mw(*args):
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.output) if "--json" in args else result.output


def test_the_rule(repo):
    other = str(repo.parent / "other")
    assert resolve_scope() == resolve_scope(".") == resolve_scope("..") == KEY
    assert resolve_scope(str(repo / "src")) == resolve_scope(global_scope=False) == KEY
    assert resolve_scope("../../other") == resolve_scope(other) == other  # no git: the dir
    assert resolve_scope("github.com/org/lib") == "github.com/org/lib"  # a key, as given
    assert resolve_scope("/moved/away") == "/moved/away"  # an old path-named project
    assert resolve_scope(global_scope=True) == ""
    with pytest.raises(InvalidInput):
        resolve_scope(".", global_scope=True)


def test_the_cli_remembers_and_searches_in_the_project_of_its_directory(repo):
    here = mw("remember", "Uploads retry three times", "--json")["id"]
    dot = mw("remember", "Uploads use multipart above 8 MB", "--project", ".", "--json")["id"]
    glob = mw("remember", "Uploads are logged", "--global", "--json")["id"]
    mw("remember", "Uploads go to the other bucket", "-p", "../../other")
    projects = {ref: mw("get", ref, "--json")["project"] for ref in (here, dot, glob)}
    assert projects == {here: KEY, dot: KEY, glob: ""}
    hits = mw("search", "uploads", "--json")["hits"]
    assert sorted(h["id"] for h in hits) == sorted([here, dot, glob])  # not the other's
    assert [h["id"] for h in mw("search", "uploads", "--global", "--json")["hits"]] == [glob]
    shown = mw("list")  # a readable name for the project's key
    assert "Uploads retry three times  (org/app, " in shown and "(global, " in shown
    both = CliRunner().invoke(cli, ["remember", "x", "--global", "--project", "."])
    assert both.exit_code == 2 and "not both" in both.output


def test_the_weave_takes_every_tier_from_one_scope(repo):
    mw("remember", "Deploys go through make deploy")
    mw("remember", "Logs rotate weekly with logrotate", "--global")
    mw("remember", "Backups run nightly with restic", "-p", "../../other")
    mw("remember", "Never merge on Fridays", "--kind", "pref", "-p", "../../other")
    mw("remember", "Always tag a release first", "--kind", "pref")

    def woven(query, *scope):
        return mw("weave", query, *scope, "--json")["text"]

    assert "make deploy" in woven("how do deploys work")
    assert "logrotate" in woven("how do logs rotate")
    here = woven("how do backups run")
    assert "restic" not in here and "Fridays" not in here  # knowledge and nudge alike
    assert "tag a release" in here
    there = woven("how do backups run", "-p", "../../other")
    assert "restic" in there and "Fridays" in there and "tag a release" not in there
    assert "restic" not in woven("how do backups run", "--global")


def test_the_mcp_server_defaults_to_the_project_of_its_directory(repo):
    from mnemoweave.mcp.server import build

    async def remember():
        await build().call_tool("memory_remember", {"text": "Tests run with pytest -q"})

    anyio.run(remember)
    listed = mw("list", "--json")["memories"]
    assert [(m["body"], m["project"]) for m in listed] == [("Tests run with pytest -q", KEY)]


def test_the_hooks_name_the_project_as_the_cli_does(repo):
    cwd = str(repo / "src")
    prompt = json.loads((ROOT / "tests/e2e/payloads/claude-code/UserPromptSubmit.json").read_text())
    (turn,) = claude_code.events("UserPromptSubmit", prompt | {"cwd": cwd})
    assert turn.project == KEY
    assert opencode.project_of({"directory": cwd, "worktree": str(repo)}) == KEY
    start = {"session_id": "s", "cwd": cwd}
    assert [e.project for e in dsh.events("session-start", start)] == [KEY]
