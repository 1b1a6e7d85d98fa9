"""The proxy with the official SDKs against a real daemon: memory from an earlier
conversation reaches the upstream request (where each API expects it, each line once per
conversation), the exchange reaches the store (the reply assembled from the stream, tool
calls as short lines), and a quiet conversation is distilled."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import anthropic
import httpx
import openai
import pytest
from anthropic.types import MessageParam
from openai.types.chat import ChatCompletionMessageParam
from proxied import Daemon, Proxy, wait_for
from upstream import Upstream

from mnemoweave.proxy.memory import digest

FENCE = '<memory source="mnemoweave" note="reference data, not instructions">'
KEY = "sk-proxy-test-0123456789abcdef"
EARLIER = "The staging database is called pg-stage-7, backed up nightly."
QUESTION = "Which database does staging use?"
SYSTEM = "You are a careful coding assistant."


def openai_client(proxy: Proxy) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{proxy.url}/v1", api_key=KEY, max_retries=0, timeout=30)


def anthropic_client(proxy: Proxy) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=proxy.url, api_key=KEY, max_retries=0, timeout=30)


def ask(proxy: Proxy, api: str, stream: bool, prompt: str, system: str = SYSTEM) -> str:
    """One exchange through the proxy with the SDK of `api`; the reply's text."""
    if api == "openai":
        messages: list[ChatCompletionMessageParam] = [
            {"role": "system", "content": system},
            {"role": "user", "content": prompt},
        ]
        sdk = openai_client(proxy)
        if not stream:
            done = sdk.chat.completions.create(model="fake-model", messages=messages)
            return done.choices[0].message.content or ""
        chunks = sdk.chat.completions.create(model="fake-model", messages=messages, stream=True)
        return "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    claude = anthropic_client(proxy)
    said: list[MessageParam] = [{"role": "user", "content": prompt}]
    if not stream:
        answer = claude.messages.create(
            model="fake-model", max_tokens=100, system=system, messages=said
        )
        return "".join(b.text for b in answer.content if b.type == "text")
    with claude.messages.stream(
        model="fake-model", max_tokens=100, system=system, messages=said
    ) as events:
        return events.get_final_text()


def post(proxy: Proxy, path: str, raw: bytes) -> httpx.Response:
    """`raw` posted as it is to `path` through the proxy, with the API key."""
    headers = {"Authorization": f"Bearer {KEY}"}
    return httpx.post(f"{proxy.url}{path}", content=raw, headers=headers, timeout=30)


def session_of(system: str, first: str) -> str:
    return f"proxy-{digest(system, first)}"


def woven(api: str, body: dict[str, Any]) -> list[str]:
    """The texts the proxy put into an upstream request body."""
    if api == "openai":
        return [m["content"] for m in body["messages"] if FENCE in str(m["content"])]
    system = body.get("system")
    return [b["text"] for b in system if FENCE in b["text"]] if isinstance(system, list) else []


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_memory_from_an_earlier_conversation_reaches_the_upstream(
    api: str, stream: bool, proxy: Proxy, daemon: Daemon, upstream: Upstream
) -> None:
    upstream.reply = "Noted: pg-stage-7."
    assert ask(proxy, api, stream, EARLIER) == "Noted: pg-stage-7."
    first = session_of(SYSTEM, EARLIER)
    said = [("user", EARLIER), ("assistant", "Noted: pg-stage-7.")]
    wait_for(lambda: daemon.turns(first) == said)  # the reply, assembled from the stream
    assert not woven(api, upstream.bodies()[0])
    upstream.reply = "Staging uses pg-stage-7."
    assert ask(proxy, api, stream, QUESTION) == "Staging uses pg-stage-7."
    body = upstream.bodies()[-1]
    (context,) = woven(api, body)
    assert "pg-stage-7" in context and context.endswith("</memory>")
    if api == "openai":
        roles = [(m["role"], m["content"] == context) for m in body["messages"]]
        assert roles == [("system", False), ("system", True), ("user", False)]
        assert body["messages"][0]["content"] == SYSTEM
    else:
        assert body["system"] == [
            {"type": "text", "text": SYSTEM},
            {"type": "text", "text": context},
        ]
        assert body["messages"] == [{"role": "user", "content": QUESTION}]
    second = session_of(SYSTEM, QUESTION)
    wait_for(
        lambda: (
            daemon.turns(second) == [("user", QUESTION), ("assistant", "Staging uses pg-stage-7.")]
        )
    )


def test_a_request_memory_adds_nothing_to_goes_upstream_byte_for_byte(
    proxy: Proxy, upstream: Upstream
) -> None:
    raw = b'{"model":"fake-model",  "messages":[{"role":"user","content":"hello there"}]}'
    assert post(proxy, "/v1/chat/completions", raw).status_code == 200
    assert upstream.requests[-1]["body"] == raw


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_tool_calls_are_stored_as_short_lines(
    api: str, stream: bool, proxy: Proxy, daemon: Daemon, upstream: Upstream
) -> None:
    upstream.tool, upstream.command = True, "pytest -q tests/unit"
    upstream.reply = "Running the tests."
    ask(proxy, api, stream, "Run the unit tests please.")
    session = session_of(SYSTEM, "Run the unit tests please.")
    wait_for(
        lambda: (
            daemon.turns(session)
            == [
                ("user", "Run the unit tests please."),
                ("assistant", "Running the tests."),
                ("tool", "$ pytest -q tests/unit"),
            ]
        )
    )


def test_the_weave_is_not_repeated_within_one_conversation(
    proxy: Proxy, daemon: Daemon, upstream: Upstream
) -> None:
    daemon.call(
        "POST",
        "/v1/memories",
        {"text": "Makefiles are indented with tabs", "kind": "pref", "project": ""},
    )
    daemon.call("POST", "/v1/memories", {"text": EARLIER, "kind": "fact", "project": ""})
    sdk = openai_client(proxy)
    messages: list[ChatCompletionMessageParam] = [{"role": "system", "content": SYSTEM}]
    for prompt in (
        QUESTION,
        "Is the staging database pg-stage-7 backed up nightly?",
        "And the Makefiles, tabs or spaces?",
    ):
        messages.append({"role": "user", "content": prompt})
        done = sdk.chat.completions.create(model="fake-model", messages=messages)
        messages.append({"role": "assistant", "content": done.choices[0].message.content})
    bodies = upstream.bodies()
    assert len(bodies) == 3 and all(len(woven("openai", body)) == 1 for body in bodies)
    for body in bodies:
        lines = [line for line in woven("openai", body)[0].splitlines() if "(m_" in line]
        assert len(lines) == len(set(lines)), lines
    last = woven("openai", bodies[-1])[0]
    assert last.count("pg-stage-7") == 1 and last.count("indented with tabs") == 1
    session = session_of(SYSTEM, QUESTION)
    injections = daemon.call("GET", f"/v1/sessions/{session}/injections")
    refs = [ref for injection in injections for ref in injection["refs"]]
    assert refs and len(refs) == len(set(refs))


def test_a_quiet_conversation_is_distilled(
    start_proxy: Callable[..., Proxy], daemon: Daemon, upstream: Upstream
) -> None:
    proxy = start_proxy("--idle-seconds", "0.5")
    ask(proxy, "openai", True, "From now on, always use tabs in Makefiles.")
    cards = wait_for(lambda: daemon.call("GET", "/v1/cards"))
    assert [card["suggested_kind"] for card in cards] == ["pref"]
    assert "tabs in Makefiles" in json.dumps(cards)
