"""The Codex and Gemini CLI adapters on payloads recorded from the real CLIs."""

import json
from pathlib import Path

import pytest

from mnemoweave.errors import InvalidInput
from mnemoweave.hosts import codex, gemini
from mnemoweave.hosts.adapters import handle
from mnemoweave.model import SessionEvent

PAYLOADS = Path(__file__).parents[1] / "e2e" / "payloads"
SESSIONS = {
    "codex": "01a244d6-cc64-7890-9816-e6fe52a8dbab",
    "gemini": "96c28f49-7d05-4326-a0ab-a0ac63d632f9",
}
PROMPT = {"codex": "UserPromptSubmit", "gemini": "BeforeAgent"}
REPLY = {"codex": "Stop", "gemini": "AfterAgent"}


def payload(host, event, **changes):
    data = json.loads((PAYLOADS / host / f"{event}.json").read_text())
    data.update(changes)
    return data


@pytest.mark.parametrize("adapter", [codex, gemini])
def test_each_recorded_payload_announces_its_events(adapter):
    kinds = {}
    for event in adapter.EVENTS:
        announced = adapter.events(event, payload(adapter.HOST, event))
        kinds[event] = [a.kind if isinstance(a, SessionEvent) else a.role for a in announced]
        assert all(a.session == SESSIONS[adapter.HOST] for a in announced)
        assert all(a.project == "/tmp/PROJECT" and a.host == adapter.HOST for a in announced)
    assert kinds == {
        "SessionStart": ["start"],
        PROMPT[adapter.HOST]: ["user"],
        REPLY[adapter.HOST]: ["assistant", "idle"],
        "SessionEnd": ["end"],
    }


def test_gemini_gives_back_the_start_context_inside_the_prompt_and_it_is_taken_out():
    given = payload("gemini", "BeforeAgent")
    assert given["prompt"].startswith("<hook_context>")
    (turn,) = gemini.events("BeforeAgent", given)
    assert turn.text == "hello there"
    assert gemini.said("<hook_context>a\nb</hook_context>\n\nfix <b>it</b>") == "fix <b>it</b>"


@pytest.mark.parametrize("adapter", [codex, gemini])
def test_a_bad_payload_is_refused_clearly(adapter):
    event = PROMPT[adapter.HOST]
    with pytest.raises(InvalidInput, match="JSON object"):
        adapter.events(event, [])
    with pytest.raises(InvalidInput, match="session_id"):
        adapter.events(event, {"prompt": "hi"})
    with pytest.raises(InvalidInput, match="prompt"):
        adapter.events(event, {"session_id": "s", "prompt": 5})
    with pytest.raises(InvalidInput, match="unknown"):
        adapter.events("PreToolUse", payload(adapter.HOST, "SessionEnd"))


@pytest.mark.parametrize("host", ["codex", "gemini"])
def test_only_the_start_and_the_prompt_print_and_only_what_the_host_reads(engine, host):
    engine.remember("以后代码注释都用英文", kind="pref", project="/tmp/PROJECT")
    engine.remember("The upload client retries 3 times with exponential backoff")
    started = handle(engine, host, "SessionStart", payload(host, "SessionStart"))
    asked = payload(host, PROMPT[host], prompt="How often does the upload client retry?")
    woven = handle(engine, host, PROMPT[host], asked)
    for output, event in ((started, "SessionStart"), (woven, PROMPT[host])):
        assert output is not None and list(output) == ["hookSpecificOutput"]
        assert set(output["hookSpecificOutput"]) == {"hookEventName", "additionalContext"}
        assert output["hookSpecificOutput"]["hookEventName"] == event
    assert "以后代码注释都用英文" in started["hookSpecificOutput"]["additionalContext"]
    assert "exponential backoff" in woven["hookSpecificOutput"]["additionalContext"]
    for event in (REPLY[host], "SessionEnd"):
        assert handle(engine, host, event, payload(host, event)) is None


@pytest.mark.parametrize("host", ["codex", "gemini"])
def test_both_sides_are_kept_once_with_the_host_and_nothing_else_of_the_payload(engine, host):
    asked = payload(host, PROMPT[host], prompt="We decided: deploys go through ArgoCD only.")
    replied = payload(host, REPLY[host])
    for _ in range(2):  # a replayed payload is stored once
        handle(engine, host, PROMPT[host], asked)
        handle(engine, host, REPLY[host], replied)
    rows = engine.db.execute("SELECT role, text, host FROM turns ORDER BY id").fetchall()
    assert [tuple(r) for r in rows] == [
        ("user", "We decided: deploys go through ArgoCD only.", host),
        ("assistant", "OK-FAKE", host),
    ]
    dumped = "\n".join(" ".join(map(str, r)) for r in engine.db.execute("SELECT * FROM turns"))
    assert "transcript_path" not in dumped and "/home/USER" not in dumped
    assert "fake-model" not in dumped and "bypassPermissions" not in dumped


def test_a_decision_stated_in_codex_reaches_a_gemini_session_in_the_same_project(engine):
    said = "From now on we always deploy with ArgoCD, never with kubectl apply."
    handle(engine, "codex", "UserPromptSubmit", payload("codex", "UserPromptSubmit", prompt=said))
    handle(engine, "codex", "Stop", payload("codex", "Stop", last_assistant_message="Noted."))
    handle(engine, "codex", "SessionEnd", payload("codex", "SessionEnd"))
    (card,) = engine.pending()
    engine.review(card.id, "accept")
    asked = payload("gemini", "BeforeAgent", prompt="How do we deploy this service?")
    woven = handle(engine, "gemini", "BeforeAgent", asked)
    assert woven is not None and "ArgoCD" in woven["hookSpecificOutput"]["additionalContext"]


# --- installing ---------------------------------------------------------------------------


@pytest.fixture
def user_home(tmp_path, monkeypatch):
    home = tmp_path / "user"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("CODEX_HOME", str(home / ".codex"))
    return home


def test_codex_install_merges_backs_up_is_idempotent_and_uninstalls_only_ours(user_home):
    from mnemoweave.hosts.install import install_codex, uninstall_codex

    codex_home = user_home / ".codex"
    codex_home.mkdir(parents=True)
    theirs = {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "notify.sh"}]}]}}
    (codex_home / "hooks.json").write_text(json.dumps(theirs))
    config = codex_home / "config.toml"
    config.write_text('model = "o4"\n\n[mcp_servers.other]\ncommand = "other"\n')
    first = install_codex()
    assert first["changed"] and first["backup"] and first["config_backup"]
    hooks = json.loads((codex_home / "hooks.json").read_text())["hooks"]
    assert set(hooks) == {"SessionStart", "UserPromptSubmit", "Stop", "SessionEnd"}
    assert hooks["Stop"][0] == theirs["hooks"]["Stop"][0] and len(hooks["Stop"]) == 2
    assert hooks["UserPromptSubmit"][0]["hooks"][0]["command"].endswith(" codex UserPromptSubmit")
    assert hooks["UserPromptSubmit"][0]["hooks"][0]["timeout"] == 5  # seconds
    import tomllib

    parsed = tomllib.loads(config.read_text())
    assert parsed["model"] == "o4" and parsed["mcp_servers"]["other"] == {"command": "other"}
    ours = parsed["mcp_servers"]["mnemoweave"]
    assert ours["args"] == ["-m", "mnemoweave", "mcp"]
    assert ours["env"]["MNEMOWEAVE_HOME"]  # Codex gives an MCP server a minimal environment
    assert install_codex()["changed"] is False
    gone = uninstall_codex()
    assert gone["changed"]
    assert json.loads((codex_home / "hooks.json").read_text()) == theirs
    assert tomllib.loads(config.read_text()) == {
        "model": "o4",
        "mcp_servers": {"other": {"command": "other"}},
    }


def test_codex_install_refuses_a_broken_config_and_touches_nothing(user_home):
    from mnemoweave.hosts.install import install_codex

    config = user_home / ".codex" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text("model = \n")
    with pytest.raises(InvalidInput, match="not valid TOML"):
        install_codex()
    assert config.read_text() == "model = \n" and not (config.parent / "hooks.json").exists()


def test_gemini_install_merges_hooks_in_milliseconds_and_the_mcp_server(user_home):
    from mnemoweave.hosts.install import install_gemini, uninstall_gemini

    settings = user_home / ".gemini" / "settings.json"
    settings.parent.mkdir(parents=True)
    theirs = {
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "mcpServers": {"other": {"command": "other"}},
        "hooks": {"AfterAgent": [{"hooks": [{"type": "command", "command": "notify.sh"}]}]},
    }
    settings.write_text(json.dumps(theirs))
    assert install_gemini()["changed"]
    data = json.loads(settings.read_text())
    assert set(data["hooks"]) == {"SessionStart", "BeforeAgent", "AfterAgent", "SessionEnd"}
    assert data["hooks"]["BeforeAgent"][0]["hooks"][0]["timeout"] == 5000  # milliseconds
    assert data["hooks"]["AfterAgent"][0] == theirs["hooks"]["AfterAgent"][0]
    assert data["mcpServers"]["other"] == {"command": "other"}
    assert data["mcpServers"]["mnemoweave"]["args"] == ["-m", "mnemoweave", "mcp"]
    assert install_gemini()["changed"] is False
    assert uninstall_gemini()["changed"]
    assert json.loads(settings.read_text()) == theirs


def test_the_install_commands_tell_codex_users_about_trust(user_home):
    from click.testing import CliRunner

    from mnemoweave.cli.main import cli

    runner = CliRunner()
    done = runner.invoke(cli, ["install", "codex"], catch_exceptions=False)
    assert done.exit_code == 0 and "/hooks" in done.output and "--trust" in done.output
    refused = runner.invoke(cli, ["install", "codex", "--scope", "project"])
    assert refused.exit_code != 0 and "user only" in refused.output
    done = runner.invoke(cli, ["install", "gemini"], catch_exceptions=False)
    assert "hooks and MCP server installed into" in done.output


ROOT = Path(__file__).parents[2]


def test_the_codex_plugin_and_the_gemini_extension_declare_the_same_hooks_as_an_install():
    from mnemoweave.hosts.install import hooks_object

    for host, folder in (("codex", "plugins/codex"), ("gemini", "plugins/gemini")):
        declared = json.loads((ROOT / folder / "hooks" / "hooks.json").read_text())
        assert declared == {"hooks": hooks_object("mnemoweave hook", host)}
    plugin = json.loads((ROOT / "plugins/codex/.codex-plugin/plugin.json").read_text())
    assert plugin["hooks"] == "./hooks/hooks.json" and plugin["mcpServers"] == "./.mcp.json"
    market = json.loads((ROOT / ".agents/plugins/marketplace.json").read_text())
    assert market["plugins"][0]["source"] == {"source": "local", "path": "./plugins/codex"}
    extension = json.loads((ROOT / "plugins/gemini/gemini-extension.json").read_text())
    assert extension["mcpServers"]["mnemoweave"] == {"command": "mnemoweave", "args": ["mcp"]}


@pytest.mark.parametrize("host", ["codex", "gemini"])
def test_a_secret_or_a_private_span_in_either_side_is_never_stored(engine, host):
    token = "ghp_" + "Zq8vXc4LmN8pQ2" * 3
    said = f"deploy with {token} <private>my home address</private> please"
    handle(engine, host, PROMPT[host], payload(host, PROMPT[host], prompt=said))
    reply = {"codex": "last_assistant_message", "gemini": "prompt_response"}[host]
    handle(engine, host, REPLY[host], payload(host, REPLY[host], **{reply: f"used {token}"}))
    stored = " ".join(text for (text,) in engine.db.execute("SELECT text FROM turns"))
    assert token[:12] not in stored and "my home address" not in stored
    assert stored.count("[REDACTED:") == 2
