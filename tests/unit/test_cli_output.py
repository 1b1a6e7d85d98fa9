"""What the CLI prints of stored text cannot drive the terminal, and `hook` misused says
so in one line."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from mnemoweave.cli.main import cli

HOSTILE = "clear \x1b[2J\x1b[H title \x1b]0;pwned\x07 csi \x9b2J bell \x07 del \x7f"
COMMANDS = [
    ["list"], ["get", "m_1"], ["get", "t_1"], ["search", "hostile"],
    ["search", "hostile", "--in", "turns"], ["rehydrate", "--session", "s1"],
    ["weave", "hostile clear title", "--budget", "400"], ["list", "--json"],
    ["get", "t_1", "--json"], ["search", "hostile", "--in", "all", "--json"],
]  # fmt: skip


def strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict | list):
        for item in value.values() if isinstance(value, dict) else value:
            yield from strings(item)


@pytest.fixture
def stored(engine):
    engine.remember(f"hostile memory: {HOSTILE}\nsecond line\tand a tab")
    engine.ingest("s1", "user", f"hostile turn: {HOSTILE}")
    engine.close()


@pytest.mark.parametrize("command", COMMANDS)
def test_control_characters_are_printed_escaped(stored, command):
    result = CliRunner().invoke(cli, command)
    assert result.exit_code == 0, result.output
    assert "hostile" in result.stdout
    for control in ("\x1b", "\x07", "\x9b", "\x7f"):
        assert control not in result.stdout
    if "--json" in command:  # the JSON says exactly what is stored
        assert any(HOSTILE in text for text in strings(json.loads(result.stdout)))
    else:
        assert "\\u001b[2J" in result.stdout and "\\u009b2J" in result.stdout


def test_newlines_and_tabs_are_kept(stored):
    result = CliRunner().invoke(cli, ["get", "m_1"])
    assert "\nsecond line\tand a tab" in result.stdout


@pytest.mark.parametrize("given", [[], ["claude-code"], ["nohost", "Stop"]])
def test_hook_without_a_host_and_event_says_so_in_one_line(mnemoweave_home, given):
    result = CliRunner().invoke(cli, ["hook", *given])
    assert result.exit_code == 0  # a host's hook never fails it
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1
    assert result.stderr.startswith("mnemoweave hook: expected HOST EVENT, HOST one of")
    assert "expected HOST EVENT" in (mnemoweave_home / "logs" / "hooks.log").read_text()
