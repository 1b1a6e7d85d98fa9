"""Every example plugin in docs/plugin-hooks.md runs: each python block is executed as a
module, registered with a plugin manager, and its hook triggered where the doc says."""

from __future__ import annotations

import json
import re
import types
from dataclasses import replace
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner

from mnemoweave import hookspecs
from mnemoweave.embed import build_models, load_embedder
from mnemoweave.hosts import adapters
from mnemoweave.model import SessionEvent
from mnemoweave.plugins import add_commands, make_plugin_manager

ROOT = Path(__file__).parents[2]
DOCS = (ROOT / "docs" / "plugin-hooks.md").read_text(encoding="utf-8")
PAYLOADS = ROOT / "tests" / "e2e" / "payloads" / "claude-code"
BLOCK = re.compile(r"^```python\n(.*?)^```", re.M | re.S)


def hookspec_names() -> list[str]:
    return sorted(
        name for name in dir(hookspecs) if hasattr(getattr(hookspecs, name), "mnemoweave_spec")
    )


def section(name: str) -> str:
    found = re.search(rf"^### {name}\(.*?$(.*?)(?=^##|\Z)", DOCS, re.M | re.S)
    assert found, f"docs/plugin-hooks.md has no section for {name}"
    return found.group(1)


def example(source: str, name: str) -> types.ModuleType:
    """The example block executed as a module (what an entry point would load)."""
    module = types.ModuleType(f"doc_example_{name}")
    exec(compile(source, f"docs/plugin-hooks.md ({name})", "exec"), module.__dict__)  # noqa: S102
    return module


def plugged(engine, name: str) -> types.ModuleType:
    """The section's one example, registered with the engine's plugin manager."""
    (source,) = BLOCK.findall(section(name))
    module = example(source, name)
    engine.pm.register(module, name=f"doc-{name}")
    return module


def payload(event: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((PAYLOADS / f"{event}.json").read_text())
    return data


# --- one check per hook: trigger it where the doc says, look for the example's effect --------


def check_register_embedders(engine, capsys):
    plugged(engine, "register_embedders")
    (result,) = build_models(["letters"], pm=engine.pm)
    assert result.built and (result.path / "letters.txt").exists()
    vectors = load_embedder("letters", engine.pm).embed(["abc", "cab", "xyz"])
    assert vectors.shape == (3, 26)
    assert float(vectors[0] @ vectors[1]) == pytest.approx(1.0)
    assert float(vectors[0] @ vectors[2]) == 0.0


def check_register_classifiers(engine, capsys):
    plugged(engine, "register_classifiers")
    engine.config = replace(engine.config, classifier="shouty")
    engine.ingest("s1", "user", "ALWAYS USE TABS")
    engine.ingest("s1", "user", "maybe tabs")
    assert [engine.get(ref).kind for ref in ("t_1", "t_2")] == ["pref", "chat"]


def check_register_distillers(engine, capsys):
    plugged(engine, "register_distillers")
    engine.ingest("s1", "user", "以后代码注释都用英文，commit message 也用英文。")
    engine.config = replace(engine.config, distiller="noop")
    assert engine.distill() == []  # the extractive distiller would propose a card here
    assert engine.pending() == []


def check_search_hits(engine, capsys):
    plugged(engine, "search_hits")
    engine.remember("Deploys go out on Tuesdays")
    found = [hit.id for hit in engine.search("how do I rollback a deploy?", source="all")]
    assert "runbook:rollback" in found
    assert "runbook:rollback" not in [hit.id for hit in engine.search("rollback a deploy")]


def check_register_hosts(engine, capsys):
    plugged(engine, "register_hosts")
    engine.remember("Uploads retry three times")
    answer = adapters.handle(
        engine, "shell", "prompt", {"session": "s1", "text": "how often do uploads retry?"}
    )
    assert "Uploads retry three times" in answer["context"]
    assert engine.get("t_1").host == "shell"
    assert adapters.handle(engine, "shell", "exit", {"session": "s1"}) is None


def check_register_commands(engine, capsys):
    (source,) = BLOCK.findall(section("register_commands"))
    pm = make_plugin_manager(load_entrypoints=False)
    pm.register(example(source, "register_commands"), name="doc-register_commands")
    group = click.Group()
    add_commands(group, pm)
    result = CliRunner().invoke(group, ["greet", "Ada"])
    assert (result.exit_code, result.output) == (0, "hello Ada\n")


def check_on_session_start(engine, capsys):
    plugged(engine, "on_session_start")
    adapters.handle(engine, "claude-code", "SessionStart", payload("SessionStart"))
    assert "started in /tmp/PROJECT" in capsys.readouterr().out


def check_on_turn(engine, capsys):
    plugged(engine, "on_turn")
    engine.ingest("s1", "user", "以后代码注释都用英文")
    engine.ingest("s1", "user", "what time is it?")
    assert capsys.readouterr().out == "new preference: 以后代码注释都用英文\n"


def check_on_session_idle(engine, capsys):
    plugged(engine, "on_session_idle")
    adapters.handle(engine, "claude-code", "Stop", payload("Stop"))  # its turn, then idle
    assert "is idle; 1 turns stored" in capsys.readouterr().out


def check_on_pre_compact(engine, capsys):
    plugged(engine, "on_pre_compact")
    adapters.handle(engine, "claude-code", "PreCompact", payload("PreCompact"))
    assert capsys.readouterr().out.startswith("compacting ")


def check_on_session_end(engine, capsys):
    plugged(engine, "on_session_end")
    engine.handle(SessionEvent("end", "s9", host="dsh"))
    assert capsys.readouterr().out == "bye s9\n"


def check_classify_turn(engine, capsys):
    plugged(engine, "classify_turn")
    engine.ingest("s1", "user", "TODO: ship the release notes")
    assert engine.get("t_1").kind == "mission"


def check_weave_blocks(engine, capsys):
    plugged(engine, "weave_blocks")
    assert "deploys freeze on Fridays" in engine.weave("can I deploy today?").text
    assert "deploys freeze" not in engine.weave("what is for lunch?").text


def check_on_card(engine, capsys):
    plugged(engine, "on_card")
    engine.ingest("s1", "user", "以后代码注释都用英文，commit message 也用英文。")
    engine.distill()
    engine.review("c_1", "accept")
    printed = capsys.readouterr().out.splitlines()
    assert [line.split()[:2] for line in printed] == [["c_1", "pending"], ["c_1", "accepted"]]


def check_on_memory(engine, capsys):
    plugged(engine, "on_memory")
    engine.remember("Uploads retry three times")
    engine.forget("m_1")
    engine.restore("m_1")
    engine.purge("m_1")
    assert capsys.readouterr().out == "new m_1\ntrashed m_1\nrestored m_1\npurged m_1\n"


@pytest.mark.parametrize("name", hookspec_names())
def test_each_hook_example_runs_and_has_its_effect(name, engine, capsys):
    check = globals().get(f"check_{name}")
    assert check, f"no check for the docs' {name} example"
    assert len(BLOCK.findall(section(name))) == 1, f"{name}: one example block"
    check(engine, capsys)


def test_the_introductory_example_runs(engine, capsys):
    first = BLOCK.findall(DOCS)[0]
    engine.pm.register(example(first, "intro"), name="doc-intro")
    engine.ingest("s1", "user", "hello", host="dsh")
    assert capsys.readouterr().out == "dsh/s1: user said 5 characters\n"
