"""The Claude Code adapter on recorded payloads, and installing its hooks into settings."""

import copy
import json
import shlex
from pathlib import Path

import pytest

from mnemoweave.errors import InvalidInput
from mnemoweave.hook import ENTRY, package_dir
from mnemoweave.hosts import claude_code, payloads
from mnemoweave.hosts.adapters import handle
from mnemoweave.hosts.install import PLUGIN_COMMAND, hooks_object, install, uninstall
from mnemoweave.model import SessionEvent, Turn

ROOT = Path(__file__).parents[2]
PAYLOADS = ROOT / "tests" / "e2e" / "payloads" / "claude-code"


def payload(event, **changes):
    data = json.loads((PAYLOADS / f"{event}.json").read_text())
    data.update(changes)
    return data


def test_each_recorded_payload_announces_its_events():
    kinds = {}
    for event in claude_code.EVENTS:
        announced = claude_code.events(event, payload(event))
        kinds[event] = [a.kind if isinstance(a, SessionEvent) else a.role for a in announced]
        assert all(a.session == "3d15ecfd-9438-4a35-b867-d886c1bf8d1e" for a in announced)
        assert all(a.project == "/tmp/PROJECT" and a.host == "claude-code" for a in announced)
    assert kinds == {
        "SessionStart": ["start"],
        "UserPromptSubmit": ["user"],
        "PostToolUse": [],  # `echo` is not worth keeping
        "Stop": ["assistant", "idle"],
        "PreCompact": ["pre_compact"],
        "SessionEnd": ["end"],
    }


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ([], "JSON object"),
        ({"prompt": "hi"}, "session_id"),
        ({"session_id": 5, "prompt": "hi"}, "session_id"),
        ({"session_id": " ", "prompt": "hi"}, "empty session_id"),
        ({"session_id": "s", "prompt": {"text": "hi"}}, "prompt"),
    ],
)
def test_a_bad_payload_is_refused_clearly(bad, message):
    with pytest.raises(InvalidInput, match=message):
        claude_code.events("UserPromptSubmit", bad)
    with pytest.raises(InvalidInput, match="unknown Claude Code event"):
        claude_code.events("Notification", payload("Stop"))


def test_tool_observations_keep_changes_and_failures_only():
    bash = payload("PostToolUse")
    failing = copy.deepcopy(bash)
    failing["tool_input"]["command"] = "pytest -q tests/test_upload.py"
    failing["tool_response"]["stderr"] = "collected 3 items\nFAILED test_upload - TimeoutError"
    assert claude_code.observation(failing) == (
        "$ pytest -q tests/test_upload.py -> stderr: FAILED test_upload - TimeoutError"
    )
    edit = {"tool_name": "Edit", "tool_input": {"file_path": "/p/app.py", "old_string": "x"}}
    assert claude_code.observation(edit) == "Edit /p/app.py"
    read = {"tool_name": "Read", "tool_input": {"file_path": "/p/app.py"}}
    assert claude_code.observation(read) == ""
    (turn,) = claude_code.events("PostToolUse", failing)
    assert turn.role == "tool" and turn.key == f"claude-code:tool:{failing['tool_use_id']}"


def test_the_prompt_is_stored_once_and_answered_with_the_weave(engine):
    engine.remember("以后代码注释都用英文", kind="pref", project="/tmp/PROJECT")
    engine.remember("Uploads retry three times with backoff", project="/tmp/PROJECT")
    start = handle(engine, "claude-code", "SessionStart", payload("SessionStart"))
    assert "以后代码注释都用英文" in start["hookSpecificOutput"]["additionalContext"]
    prompt = payload("UserPromptSubmit", prompt="How many times do uploads retry?")
    answer = handle(engine, "claude-code", "UserPromptSubmit", prompt)
    context = answer["hookSpecificOutput"]["additionalContext"]
    assert answer["hookSpecificOutput"]["hookEventName"] == "UserPromptSubmit"
    assert "retry three times" in context and context.startswith("<memory")
    handle(engine, "claude-code", "UserPromptSubmit", prompt)  # replayed: stored once
    stop = payload("Stop", last_assistant_message="Uploads retry three times.")
    assert handle(engine, "claude-code", "Stop", stop) is None
    texts = [row[0] for row in engine.db.execute("SELECT text FROM turns ORDER BY id")]
    assert texts == ["How many times do uploads retry?", "Uploads retry three times."]
    assert handle(engine, "claude-code", "SessionEnd", payload("SessionEnd")) is None
    assert engine.db.execute("SELECT ended FROM sessions").fetchone()[0] is not None


def test_stop_distills_the_session(engine):
    prompt = payload("UserPromptSubmit", prompt="From now on, always use tabs in Makefiles.")
    handle(engine, "claude-code", "UserPromptSubmit", prompt)
    handle(engine, "claude-code", "Stop", payload("Stop", last_assistant_message="Will do."))
    (card,) = engine.pending()
    assert card.suggested_kind == "pref" and card.evidence == (
        "t_1",
    )  # "OK-FAKE" says nothing to cite


def test_context_is_cut_to_claude_codes_cap_and_stays_closed():
    text = "<memory>\n" + "\n".join(f"- line {i} " + "x" * 80 for i in range(400)) + "\n</memory>"
    clipped = payloads.clipped(text)
    assert len(clipped) <= payloads.MAX_CONTEXT and clipped.endswith("\n</memory>")
    assert payloads.clipped("short") == "short"


def test_turn_keys_agree_whoever_reports_the_turn():
    a = claude_code.turn_key("s", "user", "hello there ")
    assert a == claude_code.turn_key("s", "user", "hello there")
    assert a != claude_code.turn_key("s", "assistant", "hello there")
    given = payload("UserPromptSubmit")
    (turn,) = claude_code.events("UserPromptSubmit", given)
    assert isinstance(turn, Turn) and turn.key == claude_code.turn_key(
        turn.session, "user", turn.text, given["prompt_id"]
    )
    without = {k: v for k, v in given.items() if k != "prompt_id"}  # an older Claude Code
    (older,) = claude_code.events("UserPromptSubmit", without)
    assert older.key == claude_code.turn_key(turn.session, "user", turn.text)


def test_the_same_reply_to_two_prompts_of_a_session_is_two_turns(engine):
    for number, ask in enumerate(("bump the version", "fix the typo")):
        prompt = f"prompt-{number}"
        handle(
            engine,
            "claude-code",
            "UserPromptSubmit",
            payload("UserPromptSubmit", prompt=ask, prompt_id=prompt),
        )
        handle(
            engine,
            "claude-code",
            "Stop",
            payload("Stop", last_assistant_message="Done.", prompt_id=prompt),
        )
    said = engine.db.execute("SELECT role, text FROM turns ORDER BY seq").fetchall()
    assert [tuple(row) for row in said] == [
        ("user", "bump the version"),
        ("assistant", "Done."),
        ("user", "fix the typo"),
        ("assistant", "Done."),
    ]
    assert engine.capsule(payload("Stop")["session_id"])["open"] == []  # both answered


def test_the_plugin_declares_the_same_hooks_as_an_install():
    declared = json.loads((ROOT / "plugins/claude-code/hooks/hooks.json").read_text())
    assert declared == {"hooks": hooks_object(PLUGIN_COMMAND)}
    manifest = json.loads((ROOT / "plugins/claude-code/.claude-plugin/plugin.json").read_text())
    assert manifest["name"] == "mnemoweave"
    launcher = ROOT / "plugins/claude-code/scripts/mnemoweave"
    assert launcher.stat().st_mode & 0o111
    # the entry settings installs run, without site, given the package's directory
    assert f"entry='{ENTRY}'" in launcher.read_text()
    assert '"$python" -S -c "$entry" "$package" "$@"' in launcher.read_text()


def test_install_merges_idempotently_with_a_backup_and_uninstall_leaves_the_rest(
    tmp_path, mnemoweave_home
):
    settings = tmp_path / ".claude" / "settings.json"
    settings.parent.mkdir()
    theirs = {"type": "command", "command": "notify-send done"}
    before = json.dumps({"model": "opus", "hooks": {"Stop": [{"hooks": [theirs]}]}})
    settings.write_text(before)
    first = install(settings, command="/venv/bin/python -m mnemoweave.hook")
    backup = Path(first["backup"])
    assert first["changed"] and backup.is_relative_to(mnemoweave_home / "backups")
    assert backup.read_text() == before and backup.stat().st_mode & 0o777 == 0o600
    assert [p.name for p in settings.parent.iterdir()] == ["settings.json"]
    data = json.loads(settings.read_text())
    assert data["model"] == "opus"
    assert data["hooks"]["Stop"][0] == {"hooks": [theirs]}  # theirs first, untouched
    assert data["hooks"]["Stop"][1]["hooks"][0]["command"].endswith("claude-code Stop")
    assert data["hooks"]["PostToolUse"][0]["hooks"][0]["async"] is True
    assert install(settings, command="/venv/bin/python -m mnemoweave.hook")["changed"] is False
    moved = install(settings, command="/other/python -m mnemoweave.hook")  # re-pointed
    assert moved["changed"] and len(json.loads(settings.read_text())["hooks"]["Stop"]) == 2
    removed = uninstall(settings)
    assert removed["changed"]
    assert json.loads(settings.read_text()) == {
        "model": "opus",
        "hooks": {"Stop": [{"hooks": [theirs]}]},
    }
    assert uninstall(settings)["changed"] is False


def test_install_refuses_a_broken_settings_file(tmp_path):
    settings = tmp_path / "settings.json"
    settings.write_text("{not json")
    with pytest.raises(InvalidInput, match="not valid JSON"):
        install(settings)
    assert settings.read_text() == "{not json"


def test_a_transcript_gives_what_was_said_with_the_hooks_keys(engine, tmp_path):
    lines = (PAYLOADS / "transcript.jsonl").read_text().splitlines()
    broken = ['{"type": "user", "message": {"content": "half a line', "", "[]"]
    sidechain = json.loads(next(line for line in lines if '"type":"user"' in line))
    sidechain.update(isSidechain=True, uuid="x")
    turns = claude_code.transcript_turns([*lines, *broken, json.dumps(sidechain)])
    assert [(t.role, t.text) for t in turns] == [
        ("user", "USE_TOOL and remember: 以后注释用英文"),
        ("assistant", "OK-FAKE"),
    ]
    assert all(t.project == "/tmp/PROJECT" and t.ts for t in turns)
    prompt = json.loads(next(line for line in lines if '"promptId"' in line))["promptId"]
    hook = payload(
        "UserPromptSubmit", prompt=turns[0].text, session_id=turns[0].session, prompt_id=prompt
    )
    handle(engine, "claude-code", "UserPromptSubmit", hook)
    stop = payload(
        "Stop", last_assistant_message="OK-FAKE", session_id=turns[0].session, prompt_id=prompt
    )
    handle(engine, "claude-code", "Stop", stop)
    for turn in turns:
        engine.handle(turn)
    assert engine.db.execute("SELECT count(*) FROM turns").fetchone()[0] == 2  # not 4
    later = claude_code.transcript_turns(lines[-3:], prompt)  # read on from an offset
    assert [t.key for t in later] == [turns[-1].key]
    raw = "\n".join(lines).encode()
    assert claude_code.last_prompt(raw) == prompt and claude_code.last_prompt(b"", "x") == "x"


def test_only_the_users_claude_transcripts_are_followed(tmp_path):
    projects = claude_code.transcripts_dir(tmp_path)
    (projects / "-p").mkdir(parents=True)
    good = projects / "-p" / "s.jsonl"
    good.write_text("")
    (tmp_path / "secret.jsonl").write_text("")
    (projects / "-p" / "link.jsonl").symlink_to(tmp_path / "secret.jsonl")
    assert claude_code.is_transcript(good, tmp_path)
    assert not claude_code.is_transcript(tmp_path / "secret.jsonl", tmp_path)
    assert not claude_code.is_transcript(projects / "-p" / "link.jsonl", tmp_path)
    assert not claude_code.is_transcript(projects / "-p" / ".." / ".." / "secret.jsonl", tmp_path)
    assert not claude_code.is_transcript(projects / "-p" / "missing.jsonl", tmp_path)


def test_install_and_hook_through_the_cli(tmp_path, monkeypatch, real_models):
    from click.testing import CliRunner

    from mnemoweave.cli.main import cli

    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    project = tmp_path / "repo"
    (project / ".git").mkdir(parents=True)
    (project / "src").mkdir()
    monkeypatch.chdir(project / "src")
    runner = CliRunner()
    first = runner.invoke(cli, ["install", "claude-code", "--scope", "project"])
    assert first.exit_code == 0 and "hooks installed into" in first.output
    settings = json.loads((project / ".claude" / "settings.json").read_text())
    command = settings["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"]
    given = f"-S -c {shlex.quote(ENTRY)} {shlex.quote(package_dir())} claude-code UserPromptSubmit"
    assert command.endswith(given)
    again = runner.invoke(cli, ["install", "claude-code", "--scope", "project"])
    assert again.exit_code == 0 and again.output.startswith("nothing to do")
    assert runner.invoke(cli, ["uninstall", "claude-code", "--scope", "project"]).exit_code == 0
    assert not (project / ".claude").exists()  # nothing left in it: file and folder gone
    assert sorted(p.name for p in project.rglob("*")) == [".git", "src"]  # no backup here
    assert not (tmp_path / "home" / ".claude").exists()  # the user scope was never touched
    bad = runner.invoke(cli, ["install", "no-such-host"])
    assert bad.exit_code == 2
    garbage = runner.invoke(cli, ["hook", "claude-code", "UserPromptSubmit"], input="{oops")
    assert (garbage.exit_code, garbage.output) == (0, "")


def test_import_claude_code_backfills_this_projects_transcripts_or_all(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from mnemoweave.cli.main import cli

    home, here = tmp_path / "home", tmp_path / "here"
    here.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(here)
    recorded = (PAYLOADS / "transcript.jsonl").read_text()
    folder = claude_code.transcripts_dir(home)
    (folder / "-here").mkdir(parents=True)
    (folder / "-here" / "a.jsonl").write_text(recorded.replace("/tmp/PROJECT", str(here)))
    (folder / "-tmp-PROJECT").mkdir()
    (folder / "-tmp-PROJECT" / "b.jsonl").write_text(recorded.replace("7ed603d2", "00000000"))
    runner = CliRunner()
    mine = runner.invoke(cli, ["import", "claude-code", "--json"])
    assert mine.exit_code == 0, mine.output
    assert json.loads(mine.stdout) == {"transcripts": 1, "turns": 2, "duplicate": 0, "skipped": 0}
    every = runner.invoke(cli, ["import", "claude-code", "--all", "--json"])
    assert json.loads(every.stdout) == {"transcripts": 2, "turns": 2, "duplicate": 2, "skipped": 0}
    assert runner.invoke(cli, ["import", "somewhere.md", "--all"]).exit_code == 2


def test_a_spooled_payload_keeps_no_secret_and_no_private_span(tmp_path):
    from mnemoweave import hook

    secret = "sk-ant-api03-" + "A1b2C3d4" * 6
    prompt = payload(
        "UserPromptSubmit", prompt=f"use key {secret} <private>my diary</private> please"
    )
    path = hook.spool(tmp_path, "claude-code", "UserPromptSubmit", prompt)
    assert path.stat().st_mode & 0o777 == 0o600
    raw = path.read_text()
    assert secret not in raw and "my diary" not in raw
    record = json.loads(raw)
    assert record["payload"]["prompt"] == "use key [REDACTED:api-key]  please"
    assert record["payload"]["session_id"] == prompt["session_id"]


def test_a_spooled_tool_call_keeps_what_its_observation_reads_not_its_contents(engine, tmp_path):
    from mnemoweave import hook
    from mnemoweave.daemon.spool import replay_spool

    body = "the whole file the tool read, line after line"
    bash = payload("PostToolUse")
    bash["tool_input"] |= {"command": "make deploy", "content": body}
    bash["tool_response"] |= {"stdout": body, "stderr": "make: *** [deploy] Error 2"}
    path = hook.spool(tmp_path, "claude-code", "PostToolUse", bash)
    kept = json.loads(path.read_text())["payload"]
    assert body not in path.read_text()
    assert claude_code.observation(kept) == claude_code.observation(bash)
    assert kept["tool_response"] == {"stderr": "make: *** [deploy] Error 2", "interrupted": False}
    hook.spool(engine.home, "claude-code", "PostToolUse", bash)
    assert replay_spool(engine) == 1
    (text,) = [row[0] for row in engine.db.execute("SELECT text FROM turns")]
    assert text == "$ make deploy -> stderr: make: *** [deploy] Error 2"


def test_an_observation_is_redacted_before_it_is_cut():
    token = "ghp_" + "Zq8vXc4LmN8pQ2" * 3
    command = "deploy --note " + "n" * 262 + " " + token  # the token crosses the cut
    seen = claude_code.observation(payload("PostToolUse", tool_input={"command": command}))
    assert len(seen) == claude_code.OBSERVATION and seen.endswith("…")
    assert token[:12] not in seen and "[REDACTED:" in seen


def test_a_spooled_prompt_and_its_transcript_line_are_one_turn(engine, tmp_path):
    from mnemoweave import hook
    from mnemoweave.daemon.spool import replay_spool

    secret = "ghp_" + "x1Y2z3" * 6
    said = f"deploy with token {secret} <private>note to self</private>"
    prompt = payload("UserPromptSubmit", prompt=said)
    hook.spool(engine.home, "claude-code", "UserPromptSubmit", prompt)
    assert replay_spool(engine) == 1
    engine.handle(claude_code.events("UserPromptSubmit", prompt)[0])  # the raw text, again
    assert engine.db.execute("SELECT count(*) FROM turns").fetchone()[0] == 1


def test_the_weave_does_not_quote_the_prompt_back(engine):
    handle(engine, "claude-code", "SessionStart", payload("SessionStart"))
    first = payload("UserPromptSubmit", prompt="Set up the nightly export job for the warehouse")
    answer = handle(engine, "claude-code", "UserPromptSubmit", first)
    context = answer["hookSpecificOutput"]["additionalContext"] if answer else ""
    assert "nightly export job" not in context
    assert engine.db.execute("SELECT count(*) FROM turns").fetchone()[0] == 1


def test_doctor_warns_when_the_plugin_and_a_settings_install_are_both_active(
    tmp_path, monkeypatch, real_models
):
    from click.testing import CliRunner

    from mnemoweave.cli.main import cli

    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    project = tmp_path / "repo"
    (project / ".git").mkdir(parents=True)
    monkeypatch.chdir(project)
    runner = CliRunner()
    assert runner.invoke(cli, ["install", "claude-code", "--scope", "project"]).exit_code == 0
    doctor = json.loads(runner.invoke(cli, ["doctor", "--json"]).output)
    assert doctor["warnings"] == []  # the plugin is not enabled
    user = tmp_path / "home" / ".claude" / "settings.json"
    user.parent.mkdir(parents=True)
    user.write_text(json.dumps({"enabledPlugins": {"mnemoweave@local": True}}))
    (warning,) = json.loads(runner.invoke(cli, ["doctor", "--json"]).output)["warnings"]
    assert "both installed" in warning and "--scope project" in warning


def test_a_full_disk_spends_the_reserve_on_a_payload_and_leaves_no_partial_file(
    engine, monkeypatch
):
    import os

    from mnemoweave import hook
    from mnemoweave.daemon.spool import replay_spool

    folder = engine.home / hook.SPOOL
    assert hook.keep_reserve(engine.home) and (folder / hook.RESERVE).stat().st_size > 0
    real = os.fdopen
    # the disk has no room but what the reserve holds
    monkeypatch.setattr(
        os, "fdopen", _disk_full(real, room=lambda: not (folder / hook.RESERVE).exists())
    )
    prompt = payload("UserPromptSubmit", prompt="remember to bump the chart version")
    path = hook.spool(engine.home, "claude-code", "UserPromptSubmit", prompt)
    assert json.loads(path.read_text())["payload"]["prompt"] == prompt["prompt"]
    assert sorted(p.name for p in folder.iterdir()) == [path.name]  # no partial file
    log = (engine.home / "logs" / "hooks.log").read_text()
    assert "the disk is full: the spool's reserve was freed" in log
    assert engine.status()["spool"] == {"waiting": 1, "reserve": False}
    monkeypatch.setattr(os, "fdopen", _disk_full(real, room=lambda: False))
    with pytest.raises(OSError):  # no reserve left: the hook's caller logs it
        hook.spool(engine.home, "claude-code", "UserPromptSubmit", prompt)
    assert sorted(p.name for p in folder.iterdir()) == [path.name]
    monkeypatch.setattr(os, "fdopen", real)
    assert replay_spool(engine) == 1  # stored, and the reserve made again
    assert engine.status()["spool"] == {"waiting": 0, "reserve": True}
    assert [row[0] for row in engine.db.execute("SELECT text FROM turns")] == [prompt["prompt"]]


def _disk_full(real, room):
    """os.fdopen whose files cannot be written while `room()` is false."""
    import errno

    def fdopen(fd, *args, **kwargs):
        opened = real(fd, *args, **kwargs)
        if not room():
            opened.write = lambda data: (_ for _ in ()).throw(OSError(errno.ENOSPC, "full"))
        return opened

    return fdopen
