"""The real OpenCode CLI with a custom OpenAI-compatible provider whose baseURL is the
proxy (no mnemoweave plugin): a preference said in one run reaches the upstream request
of the next, as a system message after OpenCode's own."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from proxied import Daemon, Proxy, wait_for

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the e2e package's harness

from e2e.fake_openai import FakeOpenAI, content_text  # noqa: E402
from e2e.npm import CliUnavailable  # noqa: E402
from e2e.opencode import OpenCodeHarness, install_opencode, provider_config  # noqa: E402

pytestmark = pytest.mark.e2e
FENCE = '<memory source="mnemoweave" note="reference data, not instructions">'


@pytest.fixture
def opencode(home: Path, tmp_path: Path) -> Iterator[tuple[OpenCodeHarness, Proxy]]:
    try:
        cli = install_opencode()
    except CliUnavailable as exc:
        pytest.skip(f"OpenCode unavailable: {exc}")
    with FakeOpenAI() as fake:
        harness = OpenCodeHarness(cli, fake, tmp_path / "oc", home)
        harness.seed_shared_cache()
        proxy = Proxy(home, fake.base_url, "--project", str(harness.cwd), "--idle-seconds", "1")
        try:
            config = provider_config(f"{proxy.url}/v1")
            (harness.config_dir / "opencode.json").write_text(json.dumps(config, indent=2))
            yield harness, proxy
        finally:
            proxy.stop()


def test_a_preference_from_one_run_reaches_the_next_through_the_proxy(
    opencode: tuple[OpenCodeHarness, Proxy], daemon: Daemon
) -> None:
    harness, _ = opencode
    harness.server.reply = "Noted: tabs in Makefiles."
    first = harness.run("From now on, always use tabs in Makefiles.")
    assert first.rc == 0 and first.reply == "Noted: tabs in Makefiles.", first
    assert FENCE not in json.dumps(first.bodies)
    cards = wait_for(lambda: daemon.call("GET", "/v1/cards"))
    assert {card["suggested_kind"] for card in cards} == {"pref"}
    for card in cards:
        daemon.call("POST", f"/v1/cards/{card['id']}/review", {"decision": "accept"})
    harness.server.reply = "Here is a Makefile indented with tabs."
    second = harness.run("Write a Makefile for the project.")
    assert second.rc == 0 and second.reply == "Here is a Makefile indented with tabs.", second
    (main,) = [body for body in second.bodies if body.get("tools")]
    messages = main["messages"]
    woven = [i for i, m in enumerate(messages) if FENCE in content_text(m.get("content"))]
    assert len(woven) == 1, messages
    at = woven[0]
    assert "always use tabs in Makefiles" in messages[at]["content"]
    assert messages[at]["role"] == "system"
    assert all(m["role"] == "system" for m in messages[:at])
    assert all(m["role"] != "system" for m in messages[at + 1 :])
