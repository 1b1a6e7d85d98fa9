import json

import pytest
from click.testing import CliRunner

from mnemoweave import skills
from mnemoweave.cli import cli
from mnemoweave.errors import InvalidInput, NotFound

RELEASE = {
    "summary": "Tag and push a release",
    "triggers": ["release a new version", "publish to PyPI"],
    "steps": ["bump the version in pyproject.toml", "git tag vX.Y.Z", "git push --tags"],
    "source_urls": ["https://packaging.python.org/en/latest/tutorials/packaging-projects/"],
}


def test_teach_refuses_with_every_violation_listed(engine):
    with pytest.raises(InvalidInput) as info:
        skills.teach(engine, "Bad Name", summary="", triggers=[], steps=[], source_urls=["ftp:x"])
    message = str(info.value)
    for part in ("name:", "--summary", "--step", "not an http(s) URL"):
        assert part in message
    with pytest.raises(InvalidInput, match="at least one source URL"):
        skills.teach(engine, "ok", summary="s", triggers=[], steps=["a"], source_urls=[])
    assert skills.listing(engine) == []


def test_teach_check_load_list(engine):
    skills.teach(engine, "git-release", **RELEASE)
    assert skills.check(engine, "how do I release a new version")["verdict"] == "known"
    assert skills.check(engine, "publish the docs site")["verdict"] == "partial"
    unknown = skills.check(engine, "rotate the database credentials")
    assert unknown == {"verdict": "unknown", "coverage": 0.0, "best": None}
    assert skills.load(engine, "git-release").usage_count == 1
    assert skills.load(engine, "git-release").steps[1] == "git tag vX.Y.Z"
    with pytest.raises(NotFound):
        skills.load(engine, "nope")
    # the weave shows the one-liner only
    text = engine.weave("anything").text
    assert "git-release — Tag and push a release" in text and "git tag" not in text


def test_a_source_url_keeps_no_password_or_token(engine):
    token = "Zq8vXc4LmN8pQ2" * 3
    url = f"https://wiki:hunter2hunter2@wiki.example.com/p?access_token={token}&page=2"
    taught = skills.teach(engine, "leaky", **(RELEASE | {"source_urls": [url]}))
    assert taught.source_urls == (
        "https://wiki:[REDACTED:password]@wiki.example.com/p?access_token=[REDACTED:secret]&page=2",
    )
    assert skills.load(engine, "leaky").source_urls == taught.source_urls


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
