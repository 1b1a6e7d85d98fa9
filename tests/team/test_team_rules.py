"""Team settings and rules that need no server: lists in the config, which URLs may carry
the token, content ids, and what `--share` refuses."""

from __future__ import annotations

from pathlib import Path

import pytest

from mnemoweave import Engine
from mnemoweave.config import load_config
from mnemoweave.errors import InvalidInput
from mnemoweave.team.server import check_name, check_url, content_id


def test_team_projects_from_toml_and_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    (tmp_path / "config.toml").write_text('team_projects = ["github.com/a/b", "x/y"]\n')
    assert load_config(tmp_path).team_projects == ("github.com/a/b", "x/y")
    monkeypatch.setenv("MNEMOWEAVE_TEAM_PROJECTS", " github.com/a/b, ,c/d ")
    assert load_config(tmp_path).team_projects == ("github.com/a/b", "c/d")
    (tmp_path / "config.toml").write_text("team_projects = [1, 2]\n")
    monkeypatch.delenv("MNEMOWEAVE_TEAM_PROJECTS")
    with pytest.raises(InvalidInput, match="team_projects: expected a list of strings"):
        load_config(tmp_path)


def test_the_token_goes_over_https_or_loopback_unless_allowed():
    assert check_url("https://memory.example.com", False) == ("memory.example.com", 443, True)
    assert check_url("http://127.0.0.1:8000", False) == ("127.0.0.1", 8000, False)
    assert check_url("http://localhost:9", False)[0] == "localhost"
    with pytest.raises(InvalidInput, match="--allow-insecure"):
        check_url("http://10.0.0.5:8000", False)
    assert check_url("http://10.0.0.5:8000", True) == ("10.0.0.5", 8000, False)
    with pytest.raises(InvalidInput, match="https://HOST"):
        check_url("ftp://x", True)
    with pytest.raises(InvalidInput, match="team name"):
        check_name("a b")


def test_the_content_id_is_the_normalised_text_in_its_project_and_kind():
    one = content_id("Use tabs.", "github.com/a/b", "pref")
    assert one == content_id("use  tabs", "github.com/a/b", "pref")
    assert one != content_id("use tabs", "github.com/a/c", "pref")
    assert one != content_id("use tabs", "github.com/a/b", "fact")


def test_share_is_refused_for_a_global_card_or_without_a_team(tmp_path: Path):
    home = tmp_path / "home"
    home.mkdir()
    with Engine(home) as engine:
        engine.ingest("s", "user", "Pitfall: the cache must be flushed after every deploy")
        engine.ingest("s", "assistant", "Noted.")
        engine.distill()
        card = engine.pending("")[0]
        with pytest.raises(InvalidInput, match="no team_url"):
            engine.review(card.id, "accept", share=True)
    (home / "config.toml").write_text('team_url = "http://127.0.0.1:1"\nteam_name = "t"\n')
    with Engine(home) as engine:
        with pytest.raises(InvalidInput, match="the memory is global"):
            engine.review(card.id, "accept", share=True)
        assert engine.pending("")[0].id == card.id  # still pending


def test_an_older_config_with_team_author_still_loads(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
):
    (tmp_path / "config.toml").write_text('team_url = "http://127.0.0.1:1"\nteam_author = "a@b"\n')
    with caplog.at_level("WARNING", logger="mnemoweave.config"):
        assert load_config(tmp_path).team_url == "http://127.0.0.1:1"
    assert "team_author is no longer a setting" in caplog.text
    (tmp_path / "config.toml").write_text('team_writer = "a@b"\n')
    with pytest.raises(InvalidInput, match="unknown setting"):
        load_config(tmp_path)
