"""The proxy fails open and keeps credentials off disk: the API key is forwarded and never
written; the daemon killed mid-stream or down leaves the client its whole reply; upstream
errors reach the client unchanged; a malformed body goes upstream unchanged with one log
line; a client gone away cancels the upstream request; other paths pass through."""

from __future__ import annotations

import http.client
import json
import os
import signal
import threading
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit

import anthropic
import httpx
import openai
import pytest
from openai.types.chat import ChatCompletionMessageParam
from proxied import Daemon, Proxy, stop_any_daemon, wait_for
from test_proxy_memory import KEY, SYSTEM, anthropic_client, ask, openai_client, session_of
from upstream import ERROR, Upstream

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


@pytest.mark.parametrize("status", [429, 500])
@pytest.mark.parametrize("path", ["/v1/chat/completions", "/v1/messages"])
def test_upstream_errors_reach_the_client_unchanged(
    status: int, path: str, proxy: Proxy, upstream: Upstream
) -> None:
    upstream.status = status
    for stream in (False, True):
        body = {
            "model": "fake-model",
            "max_tokens": 10,
            "stream": stream,
            "messages": [{"role": "user", "content": "Hello?"}],
        }
        answer = httpx.post(f"{proxy.url}{path}", json=body, timeout=30)
        assert answer.status_code == status
        assert answer.json() == ERROR
        assert (
            answer.headers["retry-after"] == "7" and answer.headers["x-request-id"] == "req-fake-1"
        )
    error: type[Exception] = openai.RateLimitError if status == 429 else openai.InternalServerError
    if path.endswith("/messages"):
        error = anthropic.RateLimitError if status == 429 else anthropic.InternalServerError
    with pytest.raises(error):
        ask(proxy, "anthropic" if path.endswith("/messages") else "openai", False, "Hello?")


def test_a_malformed_body_goes_upstream_unchanged_with_one_log_line(
    proxy: Proxy, upstream: Upstream
) -> None:
    raw = b'{"model": "fake-model", "messages": [{"role": "user", "content": "cut'
    answer = httpx.post(
        f"{proxy.url}/v1/chat/completions?x=1",
        content=raw,
        headers={"Authorization": f"Bearer {KEY}"},
        timeout=30,
    )
    assert answer.status_code == 400 and answer.json()["error"]["message"] == "not JSON"
    (request,) = upstream.requests
    assert request["body"] == raw and request["path"] == "/v1/chat/completions?x=1"
    assert request["headers"]["authorization"] == f"Bearer {KEY}"
    (line,) = proxy.log.splitlines()
    assert "POST /v1/chat/completions: the body is not a JSON object" in line


def test_a_client_gone_away_cancels_the_upstream_request(proxy: Proxy, upstream: Upstream) -> None:
    upstream.reply, upstream.pieces, upstream.pause = "x" * 100, 100, 0.1
    body = {"model": "fake-model", "stream": True, "messages": [{"role": "user", "content": "Go."}]}
    with httpx.stream("POST", f"{proxy.url}/v1/chat/completions", json=body, timeout=30) as answer:
        next(answer.iter_raw())
    assert upstream.cut.wait(10), "the upstream stream went on after the client left"


def test_other_paths_pass_through_unchanged(proxy: Proxy, upstream: Upstream) -> None:
    answer = httpx.get(
        f"{proxy.url}/v1/models?limit=2",
        headers={"Authorization": f"Bearer {KEY}", "X-Custom": "kept"},
        timeout=30,
    )
    assert answer.status_code == 200 and answer.json()["data"][0]["id"] == "fake-model"
    (request,) = upstream.requests
    assert request["method"] == "GET" and request["path"] == "/v1/models?limit=2"
    assert request["headers"]["authorization"] == f"Bearer {KEY}"
    assert request["headers"]["x-custom"] == "kept"
    listed = openai_client(proxy).models.list()
    assert [model.id for model in listed] == ["fake-model"]


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


@pytest.mark.parametrize("path", ["/v1/../../x", "/v1/%2e%2e/%2E%2E/x", "/v1/./models"])
def test_a_path_with_dot_segments_is_refused_and_never_sent(
    proxy: Proxy, upstream: Upstream, path: str
) -> None:
    address = urlsplit(proxy.url)
    assert address.hostname is not None, proxy.url
    connection = http.client.HTTPConnection(address.hostname, address.port, timeout=30)
    try:  # http.client sends the path as written (httpx would resolve it first)
        connection.request("GET", path, headers={"Authorization": f"Bearer {KEY}"})
        answer = connection.getresponse()
        status, body = answer.status, json.loads(answer.read())
    finally:
        connection.close()
    assert status == 400 and body["error"]["type"] == "proxy_path"
    assert upstream.requests == []
