"""manifest.json: valid against manifest.schema.json, and true: every path it names exists,
its version is the package's, the MCP command it names starts and lists its tools (from a
copy of the checkout: none of these tests needs ./setup.sh to have run in the checkout), and
every CLI command it names is in `mnemoweave --help`."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator, FormatChecker
from mcpstdio import run

import mnemoweave

ROOT = Path(__file__).resolve().parents[2]
MANIFEST = json.loads((ROOT / "manifest.json").read_text(encoding="utf-8"))
SCHEMA = json.loads((ROOT / "manifest.schema.json").read_text(encoding="utf-8"))
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
INTERFACES = MANIFEST["interfaces"]


def bundle_paths() -> FormatChecker:
    """The schema's `bundle-path` format: a path that exists under the bundle root."""
    checker = FormatChecker()
    checker.checks("bundle-path")(lambda value: (ROOT / value).exists())
    return checker


def help_text(*command: str) -> str:
    out = subprocess.run(
        [sys.executable, "-m", "mnemoweave", *command, "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_the_manifest_matches_its_schema():
    Draft202012Validator.check_schema(SCHEMA)
    validator = Draft202012Validator(SCHEMA, format_checker=bundle_paths())
    problems = [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(MANIFEST)]
    assert not problems, problems


def test_the_schema_refuses_a_missing_path_and_a_thirteenth_tool():
    validator = Draft202012Validator(SCHEMA, format_checker=bundle_paths())
    broken = json.loads(json.dumps(MANIFEST))
    broken["interfaces"]["hooks"]["opencode"]["plugin"] = "plugins/nowhere"
    broken["interfaces"]["mcp"]["tools"] += [f"memory_extra_{n}" for n in range(3)]
    messages = " ".join(e.message for e in validator.iter_errors(broken))
    assert "plugins/nowhere" in messages and "is too long" in messages


def test_name_version_and_description_are_the_package_s():
    assert MANIFEST["name"] == PROJECT["name"]
    assert PROJECT["dynamic"] == ["version"]  # the package's: mnemoweave.__version__
    assert MANIFEST["description"] == PROJECT["description"]
    assert INTERFACES["cli"]["entry_point"] == PROJECT["scripts"]["mnemoweave"]
    plugin = ROOT / INTERFACES["hooks"]["claude-code"]["files"]["manifest"]
    versions = {  # each follows the package's
        "manifest.json": MANIFEST["version"],
        "plugin.json": json.loads(plugin.read_text(encoding="utf-8"))["version"],
        "dsh": json.loads((ROOT / "plugins/dsh/package.json").read_text())["version"],
    }
    assert versions == dict.fromkeys(versions, mnemoweave.__version__)


def test_the_tcp_listener_it_names_is_the_daemon_s():
    from dataclasses import fields

    from mnemoweave.config import Config
    from mnemoweave.daemon import tcp

    listener = INTERFACES["daemon"]["tcp"]
    assert listener["setting"] in {f.name for f in fields(Config)}
    assert listener["host"] == tcp.HOST
    assert listener["token"] == f"$MNEMOWEAVE_HOME/{tcp.TOKEN_NAME}"


def _argvs() -> list[list[str]]:
    found = [["mnemoweave", name] for name in INTERFACES["cli"]["commands"]]
    found += [INTERFACES["mcp"]["cli"], INTERFACES["daemon"]["cli"], INTERFACES["web"]["cli"]]
    found += [INTERFACES["proxy"]["cli"]]
    found += [host["install"] for host in INTERFACES["hooks"].values() if "install" in host]
    return found


def test_every_cli_command_it_names_exists():
    listed = help_text().split("Commands:")[1]
    commands = {line.split()[0] for line in listed.splitlines() if line.strip()}
    for argv in _argvs():
        assert argv[0] == "mnemoweave" and argv[1] in commands, argv
        words = [w for w in argv[2:] if not w.startswith("-") and not w.isupper()]
        if words:  # arguments such as a host name appear in the command's usage
            usage = help_text(argv[1])
            assert all(re.search(rf"\b{re.escape(w)}\b", usage) for w in words), (argv, usage)


def test_the_mcp_command_starts_and_lists_its_tools(checkout_copy, tmp_path):
    """The command, run as the host runs it, from a bundle set up as ./setup.sh leaves it:
    a copy of the checkout with its .venv (see conftest.checkout_copy), so this does not
    depend on setup having run in the checkout."""
    mcp = INTERFACES["mcp"]
    command = [str(checkout_copy / mcp["command"]), *mcp["args"]]

    async def body(session):
        return [tool.name for tool in (await session.list_tools()).tools]

    assert sorted(run(tmp_path / "mw", body, command=command)) == sorted(mcp["tools"])


def test_the_claude_code_plugin_runs_the_manifest_s_commands():
    host = INTERFACES["hooks"]["claude-code"]
    plugin = ROOT / host["plugin"]
    servers = json.loads((ROOT / host["files"]["mcp"]).read_text(encoding="utf-8"))["mcpServers"]
    server = servers["mnemoweave"]
    launcher = server["command"].replace("${CLAUDE_PLUGIN_ROOT}", str(plugin))
    assert Path(launcher).resolve() == (ROOT / INTERFACES["mcp"]["command"]).resolve()
    assert server.get("args", []) == INTERFACES["mcp"]["args"]
    hooks = json.loads((ROOT / host["files"]["hooks"]).read_text(encoding="utf-8"))["hooks"]
    commands = {h["command"] for groups in hooks.values() for g in groups for h in g["hooks"]}
    for command in commands:
        path = command.split('"')[1].replace("${CLAUDE_PLUGIN_ROOT}", str(plugin))
        assert Path(path).resolve() == (ROOT / host["command"]).resolve(), command


@pytest.mark.parametrize("copy", INTERFACES["skill"]["copies"])
def test_skill_copies_are_identical(copy):
    assert (ROOT / copy).read_bytes() == (ROOT / INTERFACES["skill"]["path"]).read_bytes()
