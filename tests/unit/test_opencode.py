"""The OpenCode adapter on the payloads the plugin sent in a real OpenCode run, and
installing the plugin and the MCP server into OpenCode's config."""

import json
import sys
from pathlib import Path

import pytest

from mnemoweave.errors import InvalidInput
from mnemoweave.hosts import adapters, opencode
from mnemoweave.hosts.adapters import handle
from mnemoweave.hosts.install import (
    COMMAND_MARK,
    OPENCODE_PLUGIN,
    install_opencode,
    mcp_entry,
    opencode_paths,
    render_plugin,
    uninstall_opencode,
)
from mnemoweave.model import SessionEvent, Turn
from mnemoweave.plugins import make_plugin_manager

ROOT = Path(__file__).parents[2]
PAYLOADS = ROOT / "tests" / "e2e" / "payloads" / "opencode"
SESSION = "ses_dd83b4ca8ffecUT3tDtWM7lT9e"


def payload(event, **changes):
    data = json.loads((PAYLOADS / f"{event}.json").read_text())
    data.update(changes)
    return data


def test_opencode_is_a_host():
    assert adapters.hosts(make_plugin_manager(load_entrypoints=False))["opencode"] is opencode


def test_each_recorded_payload_announces_its_events():
    kinds = {}
    for event in opencode.EVENTS:
        announced = opencode.events(event, payload(event))
        kinds[event] = [a.kind if isinstance(a, SessionEvent) else a.role for a in announced]
        assert all(a.session == SESSION for a in announced)
        assert all(a.project == "/tmp/PROJECT" and a.host == "opencode" for a in announced)
    assert kinds == {
        "chat.message": ["user"],
        "session.created": ["start"],
        "session.idle": ["assistant", "assistant", "idle"],
        "session.compacted": ["pre_compact"],
        "experimental.session.compacting": ["pre_compact"],
    }


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ([], "JSON object"),
        ({"text": "hi"}, "sessionID"),
        ({"sessionID": 5, "text": "hi"}, "sessionID"),
        ({"sessionID": " ", "text": "hi"}, "empty sessionID"),
        ({"sessionID": "s"}, "'text'"),
        ({"sessionID": "s", "text": ["hi"]}, "'text'"),
        ({"sessionID": "s", "text": "hi", "messageID": 7}, "'messageID'"),
        ({"sessionID": "s", "text": "hi", "directory": {"a": 1}}, "'directory'"),
    ],
)
def test_a_bad_payload_is_refused_clearly(bad, message):
    with pytest.raises(InvalidInput, match=message):
        opencode.events("chat.message", bad)


@pytest.mark.parametrize(
    ("messages", "message"),
    [
        ({"id": "m"}, "must be a list"),
        (["text"], "message 0 of the payload must be an object"),
        ([{"id": "m", "text": 3}], "'text'"),
        ([{"id": "m", "text": "x", "role": "tool"}], "role 'tool'"),
        ([{"text": "x"}] * 201, "at most 200"),
    ],
)
def test_a_bad_idle_payload_is_refused_clearly(messages, message):
    with pytest.raises(InvalidInput, match=message):
        opencode.events("session.idle", payload("session.idle", messages=messages))


def test_an_unknown_event_is_refused():
    with pytest.raises(InvalidInput, match="unknown OpenCode event 'session.deleted'"):
        opencode.events("session.deleted", payload("session.created"))


def test_the_project_is_the_git_root_of_the_directory(tmp_path):
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "src").mkdir()
    inside = payload("session.created", directory=str(repo / "src"), worktree=str(repo))
    assert opencode.project_of(inside) == str(repo)
    assert opencode.project_of({"directory": "", "worktree": str(repo)}) == str(repo)
    assert opencode.project_of({"directory": "", "worktree": "/"}) == ""  # no worktree
    assert opencode.project_of({"worktree": "/"}) == ""
    assert opencode.project_of({"directory": "relative/dir"}) == ""


def test_turn_keys_come_from_message_ids_or_the_text():
    (turn,) = opencode.events("chat.message", payload("chat.message"))
    assert isinstance(turn, Turn)
    assert turn.key == f"opencode:{SESSION}:msg_227c4b4190016kmujjxs8T7JhU"
    unnamed = opencode.events("chat.message", payload("chat.message", messageID=""))[0]
    assert unnamed.key == opencode.turn_key(
        SESSION, "user", "say the staging database is pg-stage-7"
    )
    assert unnamed.key != opencode.turn_key(SESSION, "assistant", unnamed.text)
    assert unnamed.key == opencode.turn_key(SESSION, "user", unnamed.text + " ")
    idle = opencode.events("session.idle", payload("session.idle"))
    assert idle[0].key == f"opencode:{SESSION}:msg_227c4bb53001I1dQx7BVV3RgmE"


def test_empty_texts_store_nothing():
    assert opencode.events("chat.message", payload("chat.message", text="  ")) == []
    blank = [{"id": "a", "text": ""}, {"id": "b", "text": " \n"}]
    (idle,) = opencode.events("session.idle", payload("session.idle", messages=blank))
    assert idle.kind == "idle"
    assert opencode.events("session.idle", payload("session.idle", messages=None))[0].kind == "idle"


def test_a_message_is_stored_once_and_answered_with_the_weave(engine):
    engine.remember("以后代码注释都用英文", kind="pref", project="/tmp/PROJECT")
    engine.remember("The staging database is pg-stage-7", project="/tmp/PROJECT")
    start = handle(engine, "opencode", "session.created", payload("session.created"))
    assert "以后代码注释都用英文" in start["context"]
    message = payload("chat.message", text="Which database does staging use?")
    answer = handle(engine, "opencode", "chat.message", message)
    assert set(answer) == {"context"}
    assert answer["context"].startswith("<memory") and "pg-stage-7" in answer["context"]
    handle(engine, "opencode", "chat.message", message)  # replayed from the spool: stored once
    assert handle(engine, "opencode", "session.idle", payload("session.idle")) is None
    handle(engine, "opencode", "session.idle", payload("session.idle"))  # sent again
    texts = [row[0] for row in engine.db.execute("SELECT text FROM turns ORDER BY id")]
    assert texts == ["Which database does staging use?", "OK-FAKE", "OK-FAKE"]


def test_compacting_answers_with_the_capsule_and_compacted_distills(engine):
    said = "From now on, always use tabs in Makefiles."
    handle(engine, "opencode", "chat.message", payload("chat.message", text=said))
    compacting = payload("experimental.session.compacting")
    context = handle(engine, "opencode", "experimental.session.compacting", compacting)["context"]
    assert "## scene" in context and "always use tabs in Makefiles" in context  # a rule
    (card,) = engine.pending()  # distilled before the compaction
    assert card.suggested_kind == "pref"
    assert handle(engine, "opencode", "session.compacted", payload("session.compacted")) is None
    assert engine.pending() == [card]  # nothing proposed twice


def test_nothing_worth_saying_is_no_answer(engine):
    assert handle(engine, "opencode", "session.created", payload("session.created")) is None
    assert handle(engine, "opencode", "chat.message", payload("chat.message", text=" ")) is None
    assert handle(engine, "opencode", "session.compacted", payload("session.compacted")) is None


# --- installing --------------------------------------------------------------------------


@pytest.fixture
def user(tmp_path, monkeypatch):
    """An isolated HOME and XDG_CONFIG_HOME; returns OpenCode's user config dir."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    return tmp_path / "xdg" / "opencode"


def test_the_plugin_source_has_the_line_install_records_the_command_in():
    rendered = render_plugin(["/venv/bin/python", "-m", "mnemoweave"])
    line = next(line for line in rendered.splitlines() if COMMAND_MARK in line)
    assert line == (
        'const INSTALLED_COMMAND = ["/venv/bin/python", "-m", "mnemoweave"]; ' + COMMAND_MARK
    )
    source = OPENCODE_PLUGIN.read_text()
    assert rendered.replace(line, "const INSTALLED_COMMAND = []; " + COMMAND_MARK) == source
    assert "export const MnemoweavePlugin" in source
    assert source.count("\nexport ") == 1  # OpenCode runs every exported function as a plugin


def test_paths_follow_xdg_and_the_git_root(user, tmp_path, monkeypatch):
    assert opencode_paths("user") == (user / "plugin", user / "opencode.json")
    monkeypatch.setenv("XDG_CONFIG_HOME", "relative")  # not absolute: ignored
    home_config = tmp_path / "home" / ".config" / "opencode"
    assert opencode_paths("user") == (home_config / "plugin", home_config / "opencode.json")
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "src").mkdir()
    folder, config = opencode_paths("project", repo / "src")
    assert (folder, config) == (repo / ".opencode" / "plugin", repo / "opencode.json")
    (repo / "opencode.jsonc").write_text("{}")
    assert opencode_paths("project", repo)[1] == repo / "opencode.jsonc"
    with pytest.raises(InvalidInput, match="unknown scope"):
        opencode_paths("global")


def test_install_is_idempotent_keeps_the_rest_and_uninstall_removes_only_ours(user):
    user.mkdir(parents=True)
    config = user / "opencode.json"
    theirs = {"type": "remote", "url": "https://example.test/mcp", "enabled": True}
    config.write_text(json.dumps({"model": "x/y", "mcp": {"other": theirs}, "plugin": ["p"]}))
    (user / "plugin").mkdir()
    (user / "plugin" / "other.js").write_text("export const Other = async () => ({})\n")
    first = install_opencode("user")
    assert first["changed"] and Path(first["backup"]).exists()
    assert json.loads(Path(first["backup"]).read_text())["mcp"] == {"other": theirs}
    data = json.loads(config.read_text())
    assert data["model"] == "x/y" and data["plugin"] == ["p"]
    assert data["mcp"] == {"other": theirs, "mnemoweave": mcp_entry()}
    assert data["mcp"]["mnemoweave"]["command"] == [sys.executable, "-m", "mnemoweave", "mcp"]
    plugin = user / "plugin" / "mnemoweave.js"
    assert json.dumps([sys.executable, "-m", "mnemoweave"]) in plugin.read_text()
    again = install_opencode("user")
    assert again == {**first, "changed": False, "backup": None}
    plugin.write_text(plugin.read_text() + "// an older copy\n")
    assert install_opencode("user")["changed"]
    removed = uninstall_opencode("user")
    assert removed["changed"] and not plugin.exists()
    assert json.loads(config.read_text()) == {
        "model": "x/y",
        "mcp": {"other": theirs},
        "plugin": ["p"],
    }
    assert (user / "plugin" / "other.js").exists()
    assert uninstall_opencode("user")["changed"] is False


def test_install_into_a_fresh_project_and_out_again(tmp_path):
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    result = install_opencode("project", repo)
    assert result["backup"] is None
    data = json.loads((repo / "opencode.json").read_text())
    assert data == {
        "$schema": "https://opencode.ai/config.json",
        "mcp": {"mnemoweave": mcp_entry()},
    }
    assert (repo / ".opencode" / "plugin" / "mnemoweave.js").exists()
    uninstall_opencode("project", repo)
    assert [p.name for p in repo.iterdir()] == [".git"]  # no empty config, no empty folders


def test_install_refuses_what_it_cannot_merge_and_changes_nothing(user):
    user.mkdir(parents=True)
    config = user / "opencode.jsonc"
    config.write_text('{\n  // my settings\n  "model": "x/y"\n}\n')
    with pytest.raises(InvalidInput, match=r"not plain JSON.*add this by hand.*mnemoweave"):
        install_opencode("user")
    assert not (user / "plugin").exists()
    config.unlink()
    (user / "opencode.json").write_text('{"mcp": []}')
    with pytest.raises(InvalidInput, match="mcp object"):
        install_opencode("user")
    (user / "opencode.json").write_text("{}")
    (user / "plugin").mkdir()
    mine = user / "plugin" / "mnemoweave.js"
    mine.write_text("export const Mine = async () => ({})\n")
    with pytest.raises(InvalidInput, match="not mnemoweave's plugin"):
        install_opencode("user")
    assert mine.read_text().startswith("export const Mine")
    uninstall_opencode("user")
    assert mine.exists()  # not ours: left alone


def test_a_linked_plugin_is_replaced_by_a_recorded_copy(user):
    (user / "plugin").mkdir(parents=True)
    link = user / "plugin" / "mnemoweave.js"
    link.symlink_to(OPENCODE_PLUGIN)
    assert install_opencode("user")["changed"]
    assert not link.is_symlink() and sys.executable in link.read_text()
    assert OPENCODE_PLUGIN.read_text().count("INSTALLED_COMMAND = []") == 1  # source untouched


def test_install_and_uninstall_opencode_through_the_cli(user, tmp_path, monkeypatch, real_models):
    from click.testing import CliRunner

    from mnemoweave.cli.main import cli

    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    monkeypatch.chdir(repo)
    runner = CliRunner()
    first = runner.invoke(cli, ["install", "opencode", "--scope", "project"])
    assert first.exit_code == 0, first.output
    assert first.output.startswith("plugin and MCP server installed into")
    again = runner.invoke(cli, ["install", "opencode", "--scope", "project", "--json"])
    assert json.loads(again.stdout)["changed"] is False
    plain = runner.invoke(cli, ["install", "opencode", "--scope", "project"])
    assert plain.output.startswith("nothing to do:")
    gone = runner.invoke(cli, ["uninstall", "opencode", "--scope", "project"])
    assert gone.exit_code == 0 and "removed from" in gone.output
    assert not user.exists()  # the user scope was never touched
    (repo / "opencode.json").write_text("{oops")
    broken = runner.invoke(cli, ["install", "opencode", "--scope", "project"])
    assert broken.exit_code == 2 and "not plain JSON" in broken.output
