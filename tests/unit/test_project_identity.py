"""A project is named by its repository (real git): clones, worktrees and moved checkouts
share one memory; a repository without a remote is named by its main checkout; a directory
outside git by itself. Old path-named projects move to their key."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest
from click.testing import CliRunner

from mnemoweave.cli.main import cli
from mnemoweave.projects import display_name, project_from_cwd, remote_key, repository_key
from mnemoweave.store import migrations
from mnemoweave.store.db import DB_NAME, connect


@pytest.fixture(autouse=True)
def git_home(tmp_path, monkeypatch):
    """git with a HOME of its own and no system config."""
    home = tmp_path / "user"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.delenv("GIT_CONFIG_GLOBAL", raising=False)
    for role in ("AUTHOR", "COMMITTER"):
        monkeypatch.setenv(f"GIT_{role}_NAME", "t")
        monkeypatch.setenv(f"GIT_{role}_EMAIL", "t@example.com")
    repository_key.cache_clear()
    yield home
    repository_key.cache_clear()


def git(*args, cwd):
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, timeout=30)


def new_repo(path):
    path.mkdir(parents=True)
    git("init", "-q", "-b", "main", cwd=path)
    (path / "README").write_text("x")
    git("add", "README", cwd=path)
    git("commit", "-q", "-m", "first", cwd=path)
    return path


def mw(cwd, monkeypatch, *args):
    monkeypatch.chdir(cwd)
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


@pytest.mark.parametrize(
    "url",
    [
        "git@github.com:Org/repo.git",
        "https://github.com/Org/repo",
        "https://user:token@GitHub.com/Org/repo.git/",
        "ssh://git@github.com:22/Org/repo.git",
        "git+ssh://github.com/Org/repo",
    ],
)
def test_every_spelling_of_a_remote_is_one_key(url):
    assert remote_key(url) == "github.com/Org/repo"
    assert display_name(remote_key(url)) == "Org/repo"


def test_a_local_remote_is_its_path():
    assert remote_key("/srv/git/app.git") == remote_key("file:///srv/git/app.git") == "/srv/git/app"
    assert display_name("") == "global"


def test_two_clones_share_memory(tmp_path, monkeypatch):
    origin = new_repo(tmp_path / "origin")
    git("clone", "-q", str(origin), "one", cwd=tmp_path)
    git("clone", "-q", str(origin), "two", cwd=tmp_path)
    (tmp_path / "two" / "src").mkdir()
    key = project_from_cwd(str(tmp_path / "one"))
    assert key == str(origin) == project_from_cwd(str(tmp_path / "two" / "src"))
    mw(tmp_path / "one", monkeypatch, "remember", "Uploads retry three times with backoff")
    found = mw(tmp_path / "two" / "src", monkeypatch, "search", "uploads retry", "--json")
    assert [hit["project"] for hit in json.loads(found)["hits"]] == [key]


def test_a_hosted_remote_names_the_project_org_repo(tmp_path, monkeypatch):
    repo = new_repo(tmp_path / "checkout")
    git("remote", "add", "origin", "git@example.com:org/app.git", cwd=repo)
    assert project_from_cwd(str(repo)) == "example.com/org/app"
    mw(repo, monkeypatch, "remember", "The app deploys from main")
    listed = mw(repo, monkeypatch, "project", "list")
    assert "org/app  (example.com/org/app): 1 memory, 0 turns" in listed


def test_a_worktree_shares_with_its_main_checkout(tmp_path):
    main = new_repo(tmp_path / "main")
    git("worktree", "add", "-q", str(tmp_path / "feature"), cwd=main)
    assert (tmp_path / "feature" / ".git").is_file()
    assert project_from_cwd(str(tmp_path / "feature")) == project_from_cwd(str(main)) == str(main)


def test_a_moved_checkout_keeps_its_memory(tmp_path, monkeypatch):
    repo = new_repo(tmp_path / "here")
    git("remote", "add", "origin", "https://example.com/org/app", cwd=repo)
    mw(repo, monkeypatch, "remember", "Releases are tagged from main")
    moved = tmp_path / "elsewhere" / "app"
    moved.parent.mkdir()
    shutil.move(str(repo), str(moved))
    found = mw(moved, monkeypatch, "search", "releases tagged", "--json")
    assert [hit["project"] for hit in json.loads(found)["hits"]] == ["example.com/org/app"]


def test_a_repository_without_a_remote_is_its_root_and_a_plain_dir_itself(tmp_path):
    repo = new_repo(tmp_path / "solo")
    (repo / "deep" / "er").mkdir(parents=True)
    assert project_from_cwd(str(repo / "deep" / "er")) == str(repo)
    plain = tmp_path / "plain"
    plain.mkdir()
    assert project_from_cwd(str(plain)) == str(plain)


def test_path_named_projects_move_to_their_key_and_gone_ones_can_be_renamed(
    tmp_path, monkeypatch, mnemoweave_home
):
    repo = new_repo(tmp_path / "checkout")
    git("remote", "add", "origin", "https://example.com/org/app.git", cwd=repo)
    last = migrations.MIGRATIONS.index(migrations.m010_project_keys)
    with monkeypatch.context() as patch:  # a store from before projects had keys
        patch.setattr(migrations, "MIGRATIONS", migrations.MIGRATIONS[:last])
        db = connect(mnemoweave_home / DB_NAME)
    for body, project in (("in the checkout", str(repo)), ("from a gone dir", "/gone/app")):
        db.execute(
            "INSERT INTO memories (kind, body, norm, project, created, updated)"
            " VALUES ('fact', ?, ?, ?, 0, 0)",
            (body, body, project),
        )
    db.execute(
        "INSERT INTO turns (session_id, role, text, ts, seq, key, project)"
        " VALUES ('s', 'user', 'hi', 0, 1, 'k', ?)",
        (str(repo),),
    )
    db.close()
    db = connect(mnemoweave_home / DB_NAME)
    rows = db.execute("SELECT body, project FROM memories ORDER BY id").fetchall()
    assert [tuple(r) for r in rows] == [
        ("in the checkout", "example.com/org/app"),
        ("from a gone dir", "/gone/app"),  # nothing to ask git: kept until renamed
    ]
    assert db.execute("SELECT project FROM turns").fetchone()[0] == "example.com/org/app"
    db.close()
    said = mw(repo, monkeypatch, "project", "rename", "/gone/app", ".")
    assert said.strip() == "renamed /gone/app to example.com/org/app (1 row)"
    projects = json.loads(mw(repo, monkeypatch, "project", "list", "--json"))["projects"]
    assert [(p["key"], p["memories"]) for p in projects] == [("example.com/org/app", 2)]
    refused = CliRunner().invoke(cli, ["project", "rename", "/gone/app", "x"])
    assert refused.exit_code == 2 and "no project '/gone/app'" in refused.output
