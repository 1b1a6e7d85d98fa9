import json
from typing import Any

import pytest
from click.testing import CliRunner

from mnemoweave.cli.main import cli
from mnemoweave.errors import InvalidInput, NotFound

RELEASE = {
    "summary": "Tag and push a release",
    "triggers": ["release a new version", "publish to PyPI"],
    "steps": ["bump the version in pyproject.toml", "git tag vX.Y.Z", "git push --tags"],
    "source_urls": ["https://packaging.python.org/en/latest/tutorials/packaging-projects/"],
}


def test_teach_refuses_with_every_violation_listed(engine):
    with pytest.raises(InvalidInput) as info:
        engine.teach_skill("Bad Name", summary="", triggers=[], steps=[], source_urls=["ftp:x"])
    message = str(info.value)
    for part in ("name:", "--summary", "--step", "not an http(s) URL"):
        assert part in message
    with pytest.raises(InvalidInput, match="at least one source URL"):
        engine.teach_skill("ok", summary="s", triggers=[], steps=["a"], source_urls=[])
    assert engine.skills() == []


def test_teach_check_load_list(engine):
    engine.teach_skill("git-release", **RELEASE)
    assert engine.check_skill("how do I release a new version")["verdict"] == "known"
    assert engine.check_skill("publish the docs site")["verdict"] == "partial"
    unknown = engine.check_skill("rotate the database credentials")
    assert unknown == {"verdict": "unknown", "coverage": 0.0, "best": None}
    assert engine.load_skill("git-release").usage_count == 1
    assert engine.load_skill("git-release").steps[1] == "git tag vX.Y.Z"
    with pytest.raises(NotFound):
        engine.load_skill("nope")
    # the weave shows the one-liner only
    text = engine.weave("anything").text
    assert "git-release — Tag and push a release" in text and "git tag" not in text


def test_a_source_url_keeps_no_password_or_token(engine):
    token = "Zq8vXc4LmN8pQ2" * 3
    url = f"https://wiki:hunter2hunter2@wiki.example.com/p?access_token={token}&page=2"
    taught = engine.teach_skill("leaky", **(RELEASE | {"source_urls": [url]}))
    assert taught.source_urls == (
        "https://wiki:[REDACTED:password]@wiki.example.com/p?access_token=[REDACTED:secret]&page=2",
    )
    assert engine.load_skill("leaky").source_urls == taught.source_urls


def test_skill_cli(mnemoweave_home):
    runner = CliRunner()
    args = [
        "skill",
        "teach",
        "git-release",
        "--summary",
        RELEASE["summary"],
        "--step",
        "tag",
        "--trigger",
        "release a new version",
        "--source-url",
        RELEASE["source_urls"][0],
    ]
    assert runner.invoke(cli, args).exit_code == 0
    bad = runner.invoke(cli, ["skill", "teach", "x", "--step", "a"])
    assert bad.exit_code == 2 and "--summary" in bad.stderr and "--source-url" in bad.stderr
    checked = json.loads(
        runner.invoke(cli, ["skill", "check", "release a new version", "--json"]).stdout
    )
    assert checked["verdict"] == "known" and checked["best"]["name"] == "git-release"
    assert "1. tag" in runner.invoke(cli, ["skill", "load", "git-release"]).stdout
    assert "used 1" in runner.invoke(cli, ["skill", "list"]).stdout


def test_an_unknown_task_is_queued_to_learn_and_closed_when_learned(engine):

    engine.teach_skill("git-release", **RELEASE)
    engine.check_skill("how do I release a new version")  # known: not queued
    engine.check_skill("publish the docs site")  # partial: not queued
    engine.check_skill("rotate the database credentials")
    engine.check_skill("rotate   the database credentials")  # the same task, asked again
    engine.check_skill("set up the CI cache with token=Zq8vXc4LmN8pQ2Zq8vXc4LmN8pQ2")
    entries = engine.skill_queue()
    assert [(e["number"], e["asked"]) for e in entries] == [(1, 2), (2, 1)]
    assert entries[0]["task"] == "rotate the database credentials"
    assert "Zq8vXc4LmN8pQ2" not in entries[1]["task"]  # stored text is cleaned
    assert engine.close_queued_skill("1")["task"] == "rotate the database credentials"
    with pytest.raises(NotFound):
        engine.close_queued_skill("1")  # closed already
    assert [e["number"] for e in engine.skill_queue()] == [2]


def test_skill_queue_from_the_cli_and_the_mcp_tool(mnemoweave_home):
    import asyncio

    from mcp.types import CallToolResult, TextContent

    from mnemoweave.mcp.server import build

    runner = CliRunner()
    checked = runner.invoke(cli, ["skill", "check", "rotate the database credentials"])
    assert checked.stdout.startswith("unknown (queued to learn")
    assert runner.invoke(cli, ["skill", "queue"]).stdout == (
        "  1. rotate the database credentials  (asked 1x)\n"
    )

    def tool(**arguments: Any) -> str:
        result = asyncio.run(build("").call_tool("memory_skill", arguments))
        assert isinstance(result, CallToolResult)
        first = result.content[0]
        assert isinstance(first, TextContent)
        assert not result.is_error, first.text
        return first.text

    assert "queued to learn" in tool(action="check", query="renew the TLS certificates")
    assert tool(action="queue").splitlines()[1:-1] == [
        '1. "rotate the database credentials" (asked 1x)',
        '2. "renew the TLS certificates" (asked 1x)',
    ]
    assert tool(action="queue", name="2").splitlines()[1] == 'closed "renew the TLS certificates"'
    closed = runner.invoke(cli, ["skill", "queue", "--done", "rotate the database credentials"])
    assert closed.stdout == (
        "closed 1. rotate the database credentials\nthe learning queue is empty\n"
    )
    missing = runner.invoke(cli, ["skill", "queue", "--done", "9"])
    assert missing.exit_code == 2 and "no open entry" in missing.stderr
