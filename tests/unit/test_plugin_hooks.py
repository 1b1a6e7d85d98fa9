"""Every hookspec fires where its contract says, with the arguments it documents.

One `test_hook_<name>` per hookspec (as datasette's test_plugin_hooks_have_tests asks): a
hookspec without one fails `test_every_hookspec_has_a_test`.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner

from mnemoweave import hookspecs
from mnemoweave.cli.main import cli
from mnemoweave.daemon import hooks as hooks_route
from mnemoweave.daemon.schema import problem
from mnemoweave.embed import built, registered
from mnemoweave.embed.base import EmbedderSpec
from mnemoweave.errors import InvalidInput
from mnemoweave.hookspecs import hookimpl
from mnemoweave.hosts import adapters
from mnemoweave.model import Block, Card, Classification, Hit, Line, Memory, SessionEvent, Turn
from mnemoweave.plugins import add_commands, make_plugin_manager

ROOT = Path(__file__).parents[2]
PAYLOADS = ROOT / "tests" / "e2e" / "payloads" / "claude-code"
SESSION = "3d15ecfd-9438-4a35-b867-d886c1bf8d1e"  # the recorded payloads' session


def hookspec_names() -> list[str]:
    return sorted(
        name for name in dir(hookspecs) if hasattr(getattr(hookspecs, name), "mnemoweave_spec")
    )


def payload(event: str, **changes: object) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((PAYLOADS / f"{event}.json").read_text())
    data.update(changes)
    return data


class Recorder:
    """A plugin that records the notification and event hooks with the arguments given."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def of(self, hook: str) -> list[dict[str, Any]]:
        return [arguments for name, arguments in self.calls if name == hook]

    @hookimpl
    def on_session_start(self, event, engine):
        self.calls.append(("on_session_start", {"event": event, "engine": engine}))

    @hookimpl
    def on_turn(self, turn, engine):
        self.calls.append(("on_turn", {"turn": turn, "engine": engine}))

    @hookimpl
    def on_session_idle(self, event, engine):
        self.calls.append(("on_session_idle", {"event": event, "engine": engine}))

    @hookimpl
    def on_pre_compact(self, event, engine):
        self.calls.append(("on_pre_compact", {"event": event, "engine": engine}))

    @hookimpl
    def on_session_end(self, event, engine):
        self.calls.append(("on_session_end", {"event": event, "engine": engine}))

    @hookimpl
    def on_card(self, card):
        self.calls.append(("on_card", {"card": card}))

    @hookimpl
    def on_memory(self, memory, action):
        self.calls.append(("on_memory", {"memory": memory, "action": action}))


def recorder(engine) -> Recorder:
    """A Recorder registered with the engine's plugin manager."""
    plugin = Recorder()
    engine.pm.register(plugin, name="recorder")
    return plugin


# --- the meta-test -------------------------------------------------------------------------


def test_the_hookspecs_are_found():
    assert {"on_memory", "on_card", "register_hosts", "register_commands"} <= set(hookspec_names())
    assert len(hookspec_names()) == 15


@pytest.mark.parametrize("name", hookspec_names())
def test_every_hookspec_has_a_test(name):
    assert f"test_hook_{name}" in globals(), f"hookspec {name} has no test_hook_{name}"


# --- registries ----------------------------------------------------------------------------


def test_hook_register_embedders(tmp_path):
    seen = []

    class Tiny:
        @hookimpl
        def register_embedders(self, register):
            register(
                EmbedderSpec(
                    name="tiny",
                    dim=2,
                    description="two numbers",
                    build=lambda model_dir, force: None,
                    load=lambda model_dir: None,
                    is_built=lambda model_dir: seen.append(model_dir) or False,
                )
            )

    pm = make_plugin_manager(load_entrypoints=False)
    pm.register(Tiny(), name="tiny")
    assert registered(pm)["tiny"].dim == 2
    assert "use-m3" in registered(pm)  # the built-in ones are still there
    assert not built("tiny", pm, tmp_path)  # it asked the spec, for a directory
    assert seen and all(isinstance(where, Path) for where in seen)


def test_hook_register_classifiers(engine):
    class Shouty:
        @hookimpl
        def register_classifiers(self, register):
            # keyword-only: classifiers are called as classify(turn=turn)
            register(
                "shouty",
                lambda *, turn: Classification("pref", 0.9 if turn.text.isupper() else 0.1),
            )

    engine.pm.register(Shouty(), name="shouty")
    engine.config = replace(engine.config, classifier="shouty")
    engine.ingest("s1", "user", "ALWAYS USE TABS")
    turn = engine.get("t_1")
    assert (turn.kind, turn.kind_conf) == ("pref", 0.9)


def test_hook_register_distillers(engine):
    calls = []

    def one_card(*, turns, engine):  # keyword-only: distillers are called with keywords
        calls.append((turns, engine))
        first = turns[0]
        return [Card("", first.text, "pref", (first.id,), 0.8, project=first.project)]

    class Distillers:
        @hookimpl
        def register_distillers(self, register):
            register("noop", lambda turns, **kw: [])  # the documented example
            register("one-card", one_card)

    engine.pm.register(Distillers(), name="distillers")
    engine.ingest("s1", "user", "Prefer small pull requests over big ones.")
    engine.config = replace(engine.config, distiller="noop")
    assert engine.distill(session="s1") == []
    engine.ingest("s2", "user", "Name branches after their ticket.")
    engine.config = replace(engine.config, distiller="one-card")
    (card,) = engine.distill(session="s2")
    ((turns, given),) = calls
    assert [t.id for t in turns] == ["t_2"] and given is engine
    assert (card.summary, card.evidence, card.status) == (
        "Name branches after their ticket.",
        ("t_2",),
        "pending",
    )


class FakeHost:
    """A fourth host: `say` announces one user turn, `bye` ends the session."""

    @staticmethod
    def events(event, payload):
        if event == "bye":
            return [SessionEvent("end", payload["session"], host="fake")]
        return [Turn(payload["session"], "user", payload["text"], host="fake")]

    @staticmethod
    def answer(engine, event, payload, announced):
        return {"heard": len(announced), "event": event}


class FakeHostPlugin:
    @hookimpl
    def register_hosts(self, register):
        register("fake", FakeHost)


def test_hook_register_hosts(engine):
    builtin = {"claude-code", "opencode", "codex", "gemini", "dsh", "proxy"}
    assert set(adapters.hosts(engine.pm)) == builtin
    with pytest.raises(InvalidInput, match="unknown host 'fake'"):
        adapters.handle(engine, "fake", "say", {"session": "s1", "text": "hello"})
    engine.pm.register(FakeHostPlugin(), name="fake-host")
    assert set(adapters.hosts(engine.pm)) == builtin | {"fake"}
    answer = adapters.handle(engine, "fake", "say", {"session": "s1", "text": "hello there"})
    assert answer == {"heard": 1, "event": "say"}
    turn = engine.get("t_1")
    assert (turn.text, turn.host) == ("hello there", "fake")
    # the daemon's hooks route takes any name; the engine's registry decides
    route_host = hooks_route.HOST
    assert problem("host", "fake", route_host) is None
    assert problem("host", 3, route_host)


def test_hook_register_commands(monkeypatch):
    monkeypatch.setattr(cli, "commands", dict(cli.commands))  # the real CLI stays as it was
    monkeypatch.setattr(cli, "_mnemoweave_plugged", False, raising=False)
    monkeypatch.syspath_prepend(str(ROOT / "tests" / "plugins"))  # the example entry point
    runner = CliRunner()
    result = runner.invoke(cli, ["tickets", "fix ABC-1 then XY-22"])
    assert (result.exit_code, result.output) == (0, "ABC-1 XY-22\n")
    assert "tickets" in runner.invoke(cli, ["--help"]).output
    assert runner.invoke(cli, ["status"]).exit_code == 0  # built-in commands are untouched

    class Hello:
        @hookimpl
        def register_commands(self, cli):
            @cli.command()
            def hello():
                click.echo("hello from a plugin")

    group = click.Group(commands={})
    pm = make_plugin_manager(load_entrypoints=False)
    pm.register(Hello(), name="hello")
    add_commands(group, pm)
    add_commands(group, pm)  # once per group
    assert runner.invoke(group, ["hello"]).output == "hello from a plugin\n"


# --- events announced by host adapters -----------------------------------------------------


def test_hook_on_session_start(engine):
    seen = recorder(engine)
    adapters.handle(engine, "claude-code", "SessionStart", payload("SessionStart"))
    ((call,),) = [seen.of("on_session_start")]
    assert call["engine"] is engine
    event = call["event"]
    assert (event.kind, event.session, event.host, event.source) == (
        "start",
        SESSION,
        "claude-code",
        "startup",
    )


def test_hook_on_turn(engine):
    seen = recorder(engine)
    adapters.handle(
        engine,
        "claude-code",
        "UserPromptSubmit",
        payload("UserPromptSubmit", prompt="以后都用中文回答"),
    )
    ((call,),) = [seen.of("on_turn")]
    turn = call["turn"]
    assert call["engine"] is engine
    assert (turn.id, turn.seq, turn.role, turn.kind) == ("t_1", 1, "user", "pref")


def test_hook_on_session_idle(engine):
    seen = recorder(engine)
    adapters.handle(engine, "claude-code", "Stop", payload("Stop"))
    ((call,),) = [seen.of("on_session_idle")]
    assert (call["event"].kind, call["event"].session, call["engine"]) == ("idle", SESSION, engine)


def test_hook_on_pre_compact(engine):
    seen = recorder(engine)
    adapters.handle(engine, "claude-code", "PreCompact", payload("PreCompact"))
    ((call,),) = [seen.of("on_pre_compact")]
    assert (call["event"].kind, call["event"].session) == ("pre_compact", SESSION)
    assert call["engine"] is engine


def test_hook_on_session_end(engine):
    seen = recorder(engine)
    adapters.handle(engine, "claude-code", "SessionEnd", payload("SessionEnd"))
    ((call,),) = [seen.of("on_session_end")]
    assert (call["event"].kind, call["event"].session) == ("end", SESSION)
    assert call["engine"] is engine


# --- decisions and contributions -----------------------------------------------------------


def test_hook_classify_turn(engine):
    class Todo:
        @hookimpl
        def classify_turn(self, turn):
            return Classification("mission", 0.95) if turn.text.startswith("TODO:") else None

    engine.pm.register(Todo(), name="todo")
    engine.ingest("s1", "user", "TODO: ship the release notes")
    engine.ingest("s1", "user", "以后代码注释都用英文")
    assert [engine.get(ref).kind for ref in ("t_1", "t_2")] == ["mission", "pref"]


def test_hook_weave_blocks(engine):
    asked = []

    class Freeze:
        @hookimpl
        def weave_blocks(self, engine, query, session, project, budget):
            asked.append((query, session, project, budget))
            if "deploy" in query:
                return [Block("nudge", (Line("deploys freeze on Fridays", ref="wiki:freeze"),))]
            return None

    engine.pm.register(Freeze(), name="freeze")
    woven = engine.weave("can I deploy today?", session="s1", project="/p", budget=300)
    assert "deploys freeze on Fridays" in woven.text
    assert asked[-1] == ("can I deploy today?", "s1", "/p", 300)
    assert "deploys freeze" not in engine.weave("what is for lunch?").text


def test_hook_search_hits(engine):
    asked = []

    class Wiki:
        @hookimpl
        def search_hits(self, engine, source, query, k, scope, kind, mode):
            asked.append((source, query, k, scope, kind, mode))
            return [Hit("wiki:1", "fact", "Staging is pg-stage-7", 0.95, "", 0.0)]

    engine.pm.register(Wiki(), name="wiki")
    engine.remember("The staging database is small")
    assert "wiki:1" not in [hit.id for hit in engine.search("staging database")]
    assert not asked  # a search of memories alone does not ask the plugins
    hits = engine.search("staging database", source="all", k=3, project="/p", mode="lexical")
    assert sorted(hit.id for hit in hits) == ["m_1", "wiki:1"]
    assert asked == [("all", "staging database", 3, ["/p", ""], None, "lexical")]


# --- notifications -------------------------------------------------------------------------


def test_hook_on_card(engine):
    seen = recorder(engine)
    engine.ingest("s1", "user", "以后代码注释都用英文，commit message 也用英文。")
    engine.ingest(
        "s1",
        "user",
        "The upload hang was caused by httpx having no timeout; setting it to 10 seconds fixed it.",
    )
    proposed = engine.distill()
    assert [c["card"] for c in seen.of("on_card")] == proposed
    assert [c.status for c in proposed] == ["pending", "pending"]
    written = engine.review("c_1", "accept")
    engine.review("c_2", "reject", why="too specific")
    accepted, rejected = (c["card"] for c in seen.of("on_card")[2:])
    assert (accepted.id, accepted.status, accepted.memory_id) == ("c_1", "accepted", written.id)
    assert (rejected.id, rejected.status) == ("c_2", "rejected")
    assert accepted == engine.get("c_1") and rejected == engine.get("c_2")  # as stored


def test_hook_on_memory(engine):
    seen = recorder(engine)

    def told():
        return [(c["action"], c["memory"].id, c["memory"].status) for c in seen.of("on_memory")]

    engine.remember("Uploads retry three times")
    engine.remember("Uploads retry three times", tags=["net"])
    engine.remember("Uploads retry five times")
    assert told() == [
        ("new", "m_1", "active"),
        ("merged", "m_1", "active"),
        ("new", "m_2", "active"),
    ]
    assert seen.of("on_memory")[1]["memory"].tags == ("net",)  # as stored after the merge
    seen.calls.clear()
    engine.forget("m_1")
    engine.forget("m_1")  # already in the trash: nothing changed, nothing told
    engine.restore("m_1")
    engine.supersede("m_1", "m_2")
    engine.feedback("m_2", "useful")  # a weight: not an action on_memory reports
    engine.purge("m_1")
    assert told() == [
        ("trashed", "m_1", "trashed"),
        ("restored", "m_1", "active"),
        ("superseded", "m_1", "superseded"),
        ("purged", "m_1", "superseded"),  # as it was just before it was deleted
    ]
    assert all(isinstance(c["memory"], Memory) for c in seen.of("on_memory"))


def test_on_memory_fires_for_accepted_cards_and_outdated_feedback(engine):
    seen = recorder(engine)
    engine.ingest("s1", "user", "以后代码注释都用英文，commit message 也用英文。")
    engine.distill()
    written = engine.review("c_1", "accept")
    engine.feedback(written.id, "outdated")
    told = [(c["action"], c["memory"].id, c["memory"].origin) for c in seen.of("on_memory")]
    assert told == [("new", written.id, "card"), ("superseded", written.id, "card")]


def test_a_raising_notification_is_logged_and_skipped(engine, caplog):
    class Broken:
        @hookimpl
        def on_memory(self, memory, action):
            raise RuntimeError("boom")

        @hookimpl
        def on_card(self, card):
            raise RuntimeError("boom")

        @hookimpl
        def on_session_start(self, event):
            raise RuntimeError("boom")

    engine.pm.register(Broken(), name="broken")
    assert engine.remember("Uploads retry three times").action == "new"
    assert engine.forget("m_1").action == "trashed"
    engine.ingest("s1", "user", "以后代码注释都用英文，commit message 也用英文。")
    engine.distill()
    assert engine.review("c_1", "reject").action == "rejected"
    adapters.handle(engine, "claude-code", "SessionStart", payload("SessionStart"))  # no raise
    assert engine.pm.failures == {
        "broken.on_memory": 2,
        "broken.on_card": 2,
        "broken.on_session_start": 1,
    }
    assert "broken failed in on_memory" in caplog.text
