"""The hook registry: every hook documented, built-ins registered, failures isolated."""

import re
from dataclasses import replace
from pathlib import Path

import click
from click.testing import CliRunner

from mnemoweave import hookspecs
from mnemoweave.hookspecs import hookimpl
from mnemoweave.hosts import adapters
from mnemoweave.model import Card, Classification
from mnemoweave.plugins import add_commands, make_plugin_manager

DOCS = (Path(__file__).parents[2] / "docs" / "plugin-hooks.md").read_text(encoding="utf-8")


def hookspec_names():
    return sorted(
        name for name in dir(hookspecs) if hasattr(getattr(hookspecs, name), "mnemoweave_spec")
    )


def test_every_hookspec_is_documented_with_an_example():
    names = hookspec_names()
    assert len(names) >= 12
    for name in names:
        section = re.search(rf"^### {name}\(.*?$(.*?)(?=^##|\Z)", DOCS, re.M | re.S)
        assert section, f"docs/plugin-hooks.md has no section for {name}"
        assert "@hookimpl" in section.group(1), f"{name} has no example plugin"


def test_builtin_embedders_are_registered():
    pm = make_plugin_manager(load_entrypoints=False)
    specs = []
    pm.hook.register_embedders(register=specs.append)
    assert {"use-m3", "e5-small"} <= {spec.name for spec in specs}


def test_a_failing_hookimpl_is_skipped_and_counted(caplog):
    pm = make_plugin_manager(load_entrypoints=False)

    class Broken:
        @hookimpl
        def register_embedders(self, register):
            raise RuntimeError("boom")

    pm.register(Broken(), name="broken")
    specs = []
    pm.hook.register_embedders(register=specs.append)
    assert "use-m3" in {spec.name for spec in specs}  # the others still ran
    assert pm.failures == {"broken.register_embedders": 1}
    assert "broken failed in register_embedders" in caplog.text


def test_managers_are_independent():
    a, b = make_plugin_manager(load_entrypoints=False), make_plugin_manager(load_entrypoints=False)

    class Extra:
        @hookimpl
        def classify_turn(self, turn):
            return None

    a.register(Extra(), name="extra")
    assert a.has_plugin("extra") and not b.has_plugin("extra")


def test_an_entry_point_plugin_is_loaded_and_used(monkeypatch, engine):
    monkeypatch.syspath_prepend(str(Path(__file__).parents[1] / "plugins"))
    pm = make_plugin_manager()
    assert pm.has_plugin("example")
    engine._pm = pm
    engine.ingest("s1", "user", "please pick up ABC-123 today")
    assert engine.get("t_1").kind == "mission"
    assert "Link the ticket" in engine.weave("what about ABC-123").text


def test_status_counts_plugin_failures(engine):
    class Broken:
        @hookimpl
        def on_turn(self, turn):
            raise RuntimeError("boom")

    engine.pm.register(Broken(), name="broken")
    assert engine.ingest("s1", "user", "hello there").action == "new"  # the turn is not lost
    assert engine.status()["plugin_failures"] == {"broken.on_turn": 1}


def test_an_unknown_configured_classifier_falls_back_and_loses_no_turn(engine, caplog):
    from dataclasses import replace

    engine.config = replace(engine.config, classifier="nonexistent")
    assert engine.ingest("s1", "user", "以后代码注释都用英文").action == "new"
    assert engine.get("t_1").kind == "pref"
    assert "unknown classifier 'nonexistent'" in caplog.text


# --- one rule for a name registered twice: the built-in is kept, else the first ------------
# (the embedders' registry: tests/unit/test_embed.py)


def test_a_classifier_named_like_the_built_in_is_not_used(engine):
    class Impostor:
        @hookimpl
        def register_classifiers(self, register):
            register("builtin", lambda turn: Classification("mission", 1.0))

    engine.pm.register(Impostor(), name="impostor")
    engine.ingest("s1", "user", "以后代码注释都用英文")
    assert engine.get("t_1").kind == "pref"
    kept = "mnemoweave.default_plugins.classifier's is kept"
    assert engine.status()["plugin_clashes"] == [
        f"impostor: register_classifiers 'builtin' registered twice: {kept}"
    ]


def test_a_distiller_name_registered_twice_keeps_the_first_plugins(engine):
    class Distillers:
        def __init__(self, cards):
            self.cards = cards

        @hookimpl
        def register_distillers(self, register):
            register("extractive", lambda turns, **kw: self.cards)
            register("mine", lambda turns, **kw: self.cards)

    made = Card("", "Use tabs.", "pref", ("t_1",), 0.9)
    engine.pm.register(Distillers([made]), name="first")
    engine.pm.register(Distillers([]), name="second")
    engine.ingest("s1", "user", "Use tabs.")
    engine.config = replace(engine.config, distiller="mine")
    assert [card.summary for card in engine.distill(session="s1")] == ["Use tabs."]
    twice = "register_distillers 'extractive' registered twice"
    kept = "mnemoweave.default_plugins.distiller's is kept"
    assert engine.pm.clashes == [
        f"first: {twice}: {kept}",
        f"second: {twice}: {kept}",
        "second: register_distillers 'mine' registered twice: first's is kept",
    ]


def test_a_host_registered_before_the_built_ins_join_does_not_replace_them(engine):
    class Impostor:
        @hookimpl
        def register_hosts(self, register):
            register("claude-code", object())

    engine.pm.register(Impostor(), name="impostor")  # before adapters.hosts adds the built-ins
    assert adapters.hosts(engine.pm)["claude-code"] is adapters.claude_code
    kept = "mnemoweave.hosts.adapters's is kept"
    assert engine.pm.clashes == [f"impostor: register_hosts 'claude-code' registered twice: {kept}"]


def test_a_command_named_like_a_built_in_one_does_not_replace_it():
    class Commands:
        @hookimpl
        def register_commands(self, cli):
            @cli.command()
            def status():
                click.echo("not the status")

            @cli.command()
            def hello():
                click.echo("hello")

    @click.group()
    def group():
        pass

    @group.command()
    def status():
        click.echo("the status")

    pm = make_plugin_manager(load_entrypoints=False)
    pm.register(Commands(), name="commands")
    add_commands(group, pm)
    runner = CliRunner()
    assert runner.invoke(group, ["status"]).output == "the status\n"
    assert runner.invoke(group, ["hello"]).output == "hello\n"
    kept = "the command line's own is kept"
    assert pm.clashes == [f"commands: register_commands 'status' taken: {kept}"]


def test_hookimpl_is_at_the_package_top():
    import mnemoweave

    assert mnemoweave.hookimpl is hookimpl
