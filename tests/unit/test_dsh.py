"""The dsh adapter on the bridge's recorded payloads (plugins/dsh/test/payloads/wire), and
the bridge package's manifest."""

import json
from pathlib import Path

import pytest
import yaml

from mnemoweave import hook
from mnemoweave.errors import InvalidInput
from mnemoweave.hosts import adapters, dsh
from mnemoweave.hosts.adapters import handle
from mnemoweave.model import SessionEvent, Turn
from mnemoweave.plugins import make_plugin_manager

ROOT = Path(__file__).parents[2]
PLUGIN = ROOT / "plugins" / "dsh"
WIRE = PLUGIN / "test" / "payloads" / "wire"
SESSION = "session-6f1d2c3b-8e4a-4c55-9a0e-2b7c1d9e4f10"


def payload(event, **changes):
    data = json.loads((WIRE / f"{event}.json").read_text())
    data.update(changes)
    return data


def texts(engine):
    return [row[0] for row in engine.db.execute("SELECT text FROM turns ORDER BY id")]


def test_each_recorded_payload_announces_its_events():
    kinds = {}
    for event in dsh.EVENTS:
        announced = dsh.events(event, payload(event))
        kinds[event] = [a.kind if isinstance(a, SessionEvent) else a.role for a in announced]
        assert all(a.session == SESSION for a in announced)
        assert all(a.project == "/tmp/PROJECT" and a.host == "dsh" for a in announced)
    assert kinds == {
        "session-start": ["start"],
        "pre-step": ["user"],
        "turn-end": ["user", "assistant", "idle"],
        "session-end": ["end"],
    }
    (start,) = dsh.events("session-start", payload("session-start"))
    assert start.source == "startup"
    assert adapters.hosts(make_plugin_manager(load_entrypoints=False))["dsh"] is dsh


@pytest.mark.parametrize(
    ("event", "bad", "message"),
    [
        ("pre-step", [], "JSON object"),
        ("pre-step", {"turn": 1, "messages": []}, "'session_id' must be a string"),
        ("pre-step", {"session_id": 7, "turn": 1, "messages": []}, "'session_id' must be"),
        ("pre-step", {"session_id": "  ", "turn": 1, "messages": []}, "empty session_id"),
        ("session-start", {"session_id": "s", "cwd": ["/p"]}, "'cwd' must be a string"),
        ("pre-step", {"session_id": "s", "messages": []}, "'turn' must be a non-negative"),
        ("pre-step", {"session_id": "s", "turn": True, "messages": []}, "'turn' must be"),
        ("turn-end", {"session_id": "s", "turn": -1, "messages": []}, "'turn' must be"),
        ("pre-step", {"session_id": "s", "turn": 1}, "'messages' must be a list"),
        ("pre-step", {"session_id": "s", "turn": 1, "messages": ["hi"]}, r"messages\[0\]"),
        (
            "pre-step",
            {"session_id": "s", "turn": 1, "messages": [{"role": "assistant", "text": "x"}]},
            "must be one of user for pre-step",
        ),
        (
            "turn-end",
            {"session_id": "s", "turn": 1, "messages": [{"role": "tool", "text": "x"}]},
            "one of user, assistant",
        ),
        (
            "turn-end",
            {"session_id": "s", "turn": 1, "messages": [{"role": "user", "text": {"t": 1}}]},
            r"messages\[0\]: 'text' must be a string",
        ),
        ("agent/pre-step", {"session_id": "s"}, "unknown dsh event"),
    ],
)
def test_a_bad_payload_is_refused_clearly(event, bad, message):
    with pytest.raises(InvalidInput, match=message):
        dsh.events(event, bad)


def test_the_prompt_is_stored_once_and_answered_with_the_weave(engine):
    engine.remember("以后代码注释都用英文", kind="pref", project="/tmp/PROJECT")
    engine.remember("Uploads retry three times with backoff", project="/tmp/PROJECT")
    start = handle(engine, "dsh", "session-start", payload("session-start"))
    assert "以后代码注释都用英文" in start["context"] and start["context"].startswith("<memory")
    answer = handle(engine, "dsh", "pre-step", payload("pre-step"))
    assert set(answer) == {"context"}
    assert "retry three times" in answer["context"] and answer["context"].startswith("<memory")
    handle(engine, "dsh", "pre-step", payload("pre-step"))  # replayed: stored once
    assert handle(engine, "dsh", "turn-end", payload("turn-end")) is None  # the user text again
    assert texts(engine) == [
        "How many times do uploads retry?",
        "Uploads retry three times, with exponential backoff.",
    ]
    assert handle(engine, "dsh", "session-end", payload("session-end")) is None
    assert engine.db.execute("SELECT ended FROM sessions").fetchone()[0] is not None


def test_a_step_without_typed_text_stores_nothing_and_says_nothing(engine):
    step = payload("pre-step", messages=[{"role": "user", "text": "   "}])
    assert dsh.events("pre-step", step) == []
    assert handle(engine, "dsh", "pre-step", step) is None
    assert texts(engine) == []


def test_the_same_words_in_another_turn_are_another_turn(engine):
    yes = [{"role": "user", "text": "yes"}]
    handle(engine, "dsh", "pre-step", payload("pre-step", turn=4, messages=yes))
    handle(engine, "dsh", "pre-step", payload("pre-step", turn=5, messages=yes))
    handle(engine, "dsh", "turn-end", payload("turn-end", turn=5, messages=yes))
    assert texts(engine) == ["yes", "yes"]


def test_turn_end_distills_the_session(engine):
    said = [
        {"role": "user", "text": "From now on, always use tabs in Makefiles."},
        {"role": "assistant", "text": "Will do."},
    ]
    handle(engine, "dsh", "turn-end", payload("turn-end", messages=said))
    (card,) = engine.pending()
    assert card.suggested_kind == "pref" and card.evidence == (
        "t_1",
    )  # "Will do." says nothing to cite


def test_turn_keys_agree_between_pre_step_turn_end_and_the_cleaned_spool():
    key = dsh.turn_key(SESSION, 3, "user", "use key sk-ant-api03-AAAAAAAAAAAAAAAAAAAA now ")
    assert key == dsh.turn_key(SESSION, 3, "user", "use key [REDACTED:api-key] now")
    assert key != dsh.turn_key(SESSION, 4, "user", "use key [REDACTED:api-key] now")
    assert key != dsh.turn_key(SESSION, 3, "assistant", "use key [REDACTED:api-key] now")
    (step,) = dsh.events("pre-step", payload("pre-step"))
    end = dsh.events("turn-end", payload("turn-end"))
    assert isinstance(step, Turn) and step.key == end[0].key and step.key.startswith("dsh:")


def test_a_spooled_turn_end_is_stored_when_the_daemon_replays_the_spool(engine):
    from mnemoweave.daemon.spool import replay_spool

    secret = "sk-ant-api03-" + "A1b2C3d4" * 6
    said = [{"role": "user", "text": f"deploy with {secret}"}, {"role": "assistant", "text": "Ok."}]
    hook.spool(engine.home, "dsh", "turn-end", payload("turn-end", messages=said))
    handle(engine, "dsh", "pre-step", payload("pre-step", messages=said[:1]))  # delivered live
    assert replay_spool(engine) == 1
    assert texts(engine) == ["deploy with [REDACTED:api-key]", "Ok."]


def test_the_bundle_declares_its_patch_the_bridge_and_the_mcp_server():
    manifest = json.loads((PLUGIN / "package.json").read_text())
    assert manifest["dsh"] == {"bundle": {"patch": "./cordis.patch.yml"}}
    assert manifest["type"] == "module" and (PLUGIN / manifest["main"]).is_file()
    assert not manifest.get("dependencies")
    shipped = manifest["files"]
    assert {"index.js", "cordis.patch.yml"} <= set(shipped)

    class Loader(yaml.SafeLoader):
        pass

    Loader.add_constructor("!!js", lambda loader, node: ("js", loader.construct_scalar(node)))
    Loader.add_multi_constructor(
        "tag:yaml.org,2002:js", lambda loader, suffix, node: ("js", loader.construct_scalar(node))
    )
    patch = yaml.load((PLUGIN / "cordis.patch.yml").read_text(), Loader=Loader)
    (layer,) = patch
    rows = {row["id"]: row for row in layer["insert"]}
    assert rows["mnemoweave"]["name"] == manifest["name"]
    mcp = rows["mnemoweave-mcp"]
    assert mcp["name"] == "@deepseek-ai/dsh-mcp-client"
    assert mcp["config"]["transport"] == "stdio" and mcp["config"]["args"] == ["mcp"]
    assert mcp["config"]["serverName"] == "mnemoweave"
    assert mcp["config"]["command"][0] == "js" and "MNEMOWEAVE_BIN" in mcp["config"]["command"][1]


def test_install_dsh_adds_the_packaged_bundle_with_dsh_s_own_command(
    tmp_path, monkeypatch, real_models
):
    from click.testing import CliRunner

    from mnemoweave.cli.main import cli
    from mnemoweave.hosts.install import DSH_BUNDLE

    assert (DSH_BUNDLE / "package.json").read_bytes() == (PLUGIN / "package.json").read_bytes()
    monkeypatch.setenv("PATH", f"{tmp_path}:/usr/bin:/bin")
    runner = CliRunner()
    absent = runner.invoke(cli, ["install", "dsh", "--profile", "web"])
    assert absent.exit_code == 0, absent.output
    assert f"run: dsh plugin --profile web add {DSH_BUNDLE}" in absent.output

    called = tmp_path / "called"
    fake = tmp_path / "dsh"  # a stand-in that keeps its arguments
    fake.write_text(f'#!/bin/sh\necho "$@" > {called}\n')
    fake.chmod(0o755)
    added = runner.invoke(cli, ["install", "dsh", "--profile", "web", "--json"])
    assert added.exit_code == 0, added.output
    assert json.loads(added.output)["changed"] is True
    assert called.read_text() == f"plugin --profile web add {DSH_BUNDLE}\n"

    fake.write_text('#!/bin/sh\necho "no such profile: web" >&2\nexit 3\n')
    failed = runner.invoke(cli, ["install", "dsh", "--profile", "web"])
    assert failed.exit_code == 2 and "no such profile: web" in failed.output
