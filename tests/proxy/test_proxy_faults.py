"""The proxy fails open and keeps credentials off disk: the API key is forwarded and never
written; the daemon killed mid-stream or down leaves the client its whole reply; the proxy's
own token is required and never forwarded; stopping the proxy distills what is pending.
What passes through untouched is in test_proxy_passthrough.py."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable
from pathlib import Path

import anthropic
import httpx
import openai
import pytest
from openai.types.chat import ChatCompletionMessageParam
from proxied import Daemon, Proxy, stop_any_daemon, wait_for
from test_proxy_memory import KEY, SYSTEM, anthropic_client, ask, openai_client, session_of
from upstream import Upstream

from mnemoweave.hosts import client


def files_holding(root: Path, secret: bytes) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file() and secret in p.read_bytes()]


def test_the_api_key_is_forwarded_and_never_written(
    proxy: Proxy, daemon: Daemon, upstream: Upstream, home: Path
) -> None:
    for api in ("openai", "anthropic"):
        for stream in (False, True):
            ask(proxy, api, stream, f"Say hello ({api}, {stream}); my key is not {KEY[:8]}")
    httpx.post(f"{proxy.url}/v1/messages", content=b"{oops", headers={"x-api-key": KEY})
    upstream.status = 500
    with pytest.raises(openai.InternalServerError):
        ask(proxy, "openai", True, "fail please")
    keys = [
        r["headers"].get("authorization") or r["headers"].get("x-api-key")
        for r in upstream.requests
    ]
    assert keys and set(keys) <= {f"Bearer {KEY}", KEY} and KEY in keys
    last = session_of(SYSTEM, f"Say hello (anthropic, True); my key is not {KEY[:8]}")
    wait_for(lambda: len(daemon.turns(last)) == 2)
    assert proxy.stop() in (0, -signal.SIGTERM)  # uvicorn re-raises the signal it handled
    assert "not a JSON object" in proxy.log  # the logs exist, and hold no key
    assert files_holding(home, KEY.encode()) == []
    assert not any(KEY.encode() in line for line in proxy.output)


def test_the_daemon_killed_mid_stream_leaves_the_client_its_whole_reply(
    proxy: Proxy, daemon: Daemon, upstream: Upstream, home: Path
) -> None:
    upstream.reply, upstream.pieces, upstream.pause = "one two three four five six", 6, 0.2
    messages: list[ChatCompletionMessageParam] = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": "Count."},
    ]
    chunks = openai_client(proxy).chat.completions.create(
        model="fake-model", messages=messages, stream=True
    )
    said = []
    for chunk in chunks:
        said.append(chunk.choices[0].delta.content or "" if chunk.choices else "")
        if len(said) == 2:
            os.kill(daemon.pid, signal.SIGKILL)
    assert "".join(said) == "one two three four five six"
    daemon.process.wait(timeout=10)
    # the proxy starts a daemon again, and the exchange is stored after all
    wait_for(lambda: client.running(home, timeout=1.0), within=60)
    session = session_of(SYSTEM, "Count.")
    stored = [("user", "Count."), ("assistant", "one two three four five six")]
    wait_for(lambda: Daemon.turns_of(home, session) == stored, within=60)
    stop_any_daemon(home)


def test_with_no_daemon_the_request_goes_upstream_untouched_and_one_is_started(
    start_proxy: Callable[..., Proxy], upstream: Upstream, home: Path
) -> None:
    proxy = start_proxy()
    raw = b'{"model": "fake-model", "messages": [{"role": "user", "content": "Hi."}]}'
    try:
        answer = httpx.post(f"{proxy.url}/v1/chat/completions", content=raw, timeout=30)
        assert answer.status_code == 200 and upstream.requests[-1]["body"] == raw
        wait_for(lambda: client.running(home, timeout=1.0), within=60)
        session = session_of("", "Hi.")
        wait_for(
            lambda: Daemon.turns_of(home, session) == [("user", "Hi."), ("assistant", "OK-FAKE")]
        )
    finally:
        stop_any_daemon(home)


def test_the_proxy_token_is_required_and_not_forwarded(
    start_proxy: Callable[..., Proxy], daemon: Daemon, upstream: Upstream
) -> None:
    proxy = start_proxy("--token", "local-secret")
    with pytest.raises(anthropic.AuthenticationError):
        anthropic_client(proxy).messages.create(
            model="fake-model", max_tokens=10, messages=[{"role": "user", "content": "Hi"}]
        )
    assert upstream.requests == []
    sdk = openai.OpenAI(
        base_url=f"{proxy.url}/v1",
        api_key=KEY,
        max_retries=0,
        default_headers={"X-Mnemoweave-Token": "local-secret"},
    )
    sdk.chat.completions.create(model="fake-model", messages=[{"role": "user", "content": "Hi"}])
    (request,) = upstream.requests
    assert not any(name.lower().startswith("x-mnemoweave") for name in request["headers"])


def test_stopping_the_proxy_distills_what_is_pending(
    start_proxy: Callable[..., Proxy], daemon: Daemon, upstream: Upstream
) -> None:
    proxy = start_proxy("--idle-seconds", "600")
    ask(proxy, "anthropic", True, "From now on, always write commit messages in English.")
    done = threading.Event()

    def stop() -> None:
        proxy.stop()
        done.set()

    threading.Thread(target=stop, daemon=True).start()
    assert done.wait(30)
    cards = wait_for(lambda: daemon.call("GET", "/v1/cards"))
    assert [card["suggested_kind"] for card in cards] == ["pref"]
