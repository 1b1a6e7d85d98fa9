"""What the proxy passes through or refuses without the memory taking part, with one proxy
(in front of one daemon) for the whole module: upstream errors reach the client unchanged;
a malformed body goes upstream unchanged with one log line; a client gone away cancels the
upstream request; other paths pass through; a path with dot segments is refused and never
sent. The fake upstream is reset before each test."""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import anthropic
import httpx
import openai
import pytest
from proxied import BUDGET_MS, Daemon, Proxy, new_home, stop_any_daemon
from test_proxy_memory import KEY, ask, openai_client, post
from upstream import ERROR, Upstream


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    path = new_home(tmp_path_factory)
    yield path
    stop_any_daemon(path)


@pytest.fixture(scope="module")
def daemon(home: Path) -> Iterator[Daemon]:
    running = Daemon(home)
    yield running
    running.stop()


@pytest.fixture(scope="module")
def shared_upstream() -> Iterator[Upstream]:
    fake = Upstream()
    yield fake
    fake.stop()


@pytest.fixture
def upstream(shared_upstream: Upstream) -> Upstream:
    shared_upstream.reset()
    return shared_upstream


@pytest.fixture(scope="module")
def proxy(home: Path, daemon: Daemon, shared_upstream: Upstream) -> Iterator[Proxy]:
    running = Proxy(home, shared_upstream.url, MNEMOWEAVE_PROXY_BUDGET_MS=BUDGET_MS)
    yield running
    running.stop()


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
    logged = len(proxy.log)
    raw = b'{"model": "fake-model", "messages": [{"role": "user", "content": "cut'
    answer = post(proxy, "/v1/chat/completions?x=1", raw)
    assert answer.status_code == 400 and answer.json()["error"]["message"] == "not JSON"
    (request,) = upstream.requests
    assert request["body"] == raw and request["path"] == "/v1/chat/completions?x=1"
    assert request["headers"]["authorization"] == f"Bearer {KEY}"
    (line,) = proxy.log[logged:].splitlines()
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
