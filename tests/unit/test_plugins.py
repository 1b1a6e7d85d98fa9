"""The hook registry: every hook documented, built-ins registered, failures isolated."""

import re
from pathlib import Path

from mnemoweave import hookspecs
from mnemoweave.hookspecs import hookimpl
from mnemoweave.plugins import failures, make_plugin_manager, register

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

    register(pm, Broken(), name="broken")
    specs = []
    pm.hook.register_embedders(register=specs.append)
    assert "use-m3" in {spec.name for spec in specs}  # the others still ran
    assert failures(pm) == {"broken.register_embedders": 1}
    assert "broken failed in register_embedders" in caplog.text


def test_managers_are_independent():
    a, b = make_plugin_manager(load_entrypoints=False), make_plugin_manager(load_entrypoints=False)

    class Extra:
        @hookimpl
        def classify_turn(self, turn):
            return None

    register(a, Extra(), name="extra")
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

    register(engine.pm, Broken(), name="broken")
    assert engine.ingest("s1", "user", "hello there").action == "new"  # the turn is not lost
    assert engine.status()["plugin_failures"] == {"broken.on_turn": 1}


def test_an_unknown_configured_classifier_falls_back_and_loses_no_turn(engine, caplog):
    from dataclasses import replace

    engine.config = replace(engine.config, classifier="nonexistent")
    assert engine.ingest("s1", "user", "以后代码注释都用英文").action == "new"
    assert engine.get("t_1").kind == "pref"
    assert "unknown classifier 'nonexistent'" in caplog.text
