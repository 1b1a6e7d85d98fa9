"""The optional loopback TCP listener: off by default, bound to 127.0.0.1 only, and every
request needs the data dir's bearer token and a loopback Host header."""

from __future__ import annotations

import http.client
import json
import os
import socket
import stat
from pathlib import Path
from typing import Any

import pytest
from running import start_daemon

from mnemoweave.config import load_config
from mnemoweave.errors import InvalidInput
from mnemoweave.hosts import client

TIMEOUT = 10.0


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def over_tcp(
    port: int, method: str, path: str, body: dict[str, Any] | None = None, **headers: str
) -> tuple[int, dict[str, Any], dict[str, str]]:
    """One request to the loopback port: (status, JSON answer, response headers)."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=TIMEOUT)
    try:
        data = b"" if body is None else json.dumps(body).encode()
        if body is not None:
            headers = {"Content-Type": "application/json"} | headers
        connection.request(method, path, body=data, headers=headers)
        answer = connection.getresponse()
        return answer.status, json.loads(answer.read()), dict(answer.getheaders())
    finally:
        connection.close()


def listening_addresses(port: int) -> set[str]:
    """The local addresses some socket listens on at `port` (Linux /proc/net/tcp, tcp6)."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            local, state = line.split()[1], line.split()[3]
            address, hex_port = local.rsplit(":", 1)
            if state == "0A" and int(hex_port, 16) == port:  # 0A: LISTEN
                found.add(address)
    return found


@pytest.fixture
def tcp_daemon(home):
    port = free_port()
    running = start_daemon(home, MNEMOWEAVE_DAEMON_PORT=str(port))
    yield running, port
    running.stop()


def authorised(home: Path, port: int) -> dict[str, str]:
    token = (home / "daemon.token").read_text().strip()
    return {"Authorization": f"Bearer {token}", "Host": f"127.0.0.1:{port}"}


def test_off_by_default(daemon):
    state = daemon.call("GET", "/v1/daemon")
    assert state["tcp"] is None and state["tcp_error"] is None
    assert not (daemon.home / "daemon.token").exists()


def test_binds_loopback_only_and_makes_a_private_token(tcp_daemon):
    daemon, port = tcp_daemon
    assert daemon.call("GET", "/v1/daemon")["tcp"] == f"127.0.0.1:{port}"
    if Path("/proc/net/tcp").exists():
        assert listening_addresses(port) == {"0100007F"}  # 127.0.0.1, little-endian hex
    token = daemon.home / "daemon.token"
    assert stat.S_IMODE(os.stat(token).st_mode) == 0o600
    assert len(token.read_text().strip()) >= 32


def test_a_request_without_the_right_token_is_refused_and_changes_nothing(tcp_daemon):
    daemon, port = tcp_daemon
    host = {"Host": f"127.0.0.1:{port}"}
    body = {"text": "refused over tcp"}
    status, answer, headers = over_tcp(port, "POST", "/v1/memories", body, **host)
    assert status == 401 and headers.get("WWW-Authenticate") == "Bearer"
    assert answer == {
        "error": "a bearer token is required (it is in $MNEMOWEAVE_HOME/daemon.token)"
    }
    wrong = {"Authorization": "Bearer " + "x" * 43} | host
    status, answer, _ = over_tcp(port, "POST", "/v1/memories", body, **wrong)
    assert (status, answer) == (401, {"error": "the bearer token is wrong"})
    basic = {"Authorization": "Basic dXNlcjpwYXNz"} | host
    assert over_tcp(port, "GET", "/v1/status", **basic)[0] == 401
    assert daemon.call("GET", "/v1/status")["counts"]["memories"] == 0
    assert daemon.call("GET", "/v1/daemon")["requests"]["refused"] >= 3


def test_a_foreign_host_header_is_refused_even_with_the_token(tcp_daemon):
    daemon, port = tcp_daemon
    headers = authorised(daemon.home, port) | {"Host": f"attacker.example:{port}"}
    status, answer, _ = over_tcp(port, "POST", "/v1/memories", {"text": "rebound"}, **headers)
    assert status == 403
    assert answer == {"error": f"the Host header must be 127.0.0.1:{port} or localhost:{port}"}
    assert daemon.call("GET", "/v1/status")["counts"]["memories"] == 0


def test_with_the_token_it_serves_the_same_api_as_the_socket(tcp_daemon):
    daemon, port = tcp_daemon
    headers = authorised(daemon.home, port)
    body = {"text": "the uploader needs httpx timeouts", "kind": "conclusion"}
    status, answer, _ = over_tcp(port, "POST", "/v1/memories", body, **headers)
    assert status == 200 and answer["result"]["action"] == "new"
    ref = answer["result"]["id"]
    assert daemon.call("GET", f"/v1/records/{ref}")["body"] == body["text"]
    localhost = headers | {"Host": f"localhost:{port}"}
    status, answer, _ = over_tcp(port, "GET", f"/v1/records/{ref}", **localhost)
    assert status == 200 and answer["result"]["id"] == ref
    status, answer, _ = over_tcp(port, "GET", "/v1/records/m_999999", **headers)
    assert status == 404 and list(answer) == ["error"]


def test_the_token_survives_a_restart_and_a_loose_mode_is_tightened(home):
    port = free_port()
    first = start_daemon(home, MNEMOWEAVE_DAEMON_PORT=str(port))
    token = (home / "daemon.token").read_text()
    assert first.stop() == 0
    os.chmod(home / "daemon.token", 0o644)
    second = start_daemon(home, MNEMOWEAVE_DAEMON_PORT=str(port))
    try:
        assert (home / "daemon.token").read_text() == token
        assert stat.S_IMODE(os.stat(home / "daemon.token").st_mode) == 0o600
        assert over_tcp(port, "GET", "/v1/status", **authorised(home, port))[0] == 200
    finally:
        assert second.stop() == 0


def test_a_taken_port_leaves_the_socket_serving_and_says_why(home):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        daemon = start_daemon(home, MNEMOWEAVE_DAEMON_PORT=str(port))
        try:
            state = daemon.call("GET", "/v1/daemon")
            assert state["tcp"] is None
            assert state["tcp_error"].startswith(f"127.0.0.1:{port}: ")
            assert "in use" in state["tcp_error"]
            assert client.running(home)
        finally:
            assert daemon.stop() == 0


@pytest.mark.parametrize("port", ["-1", "65536"])
def test_a_port_out_of_range_is_named(home, monkeypatch, port):
    monkeypatch.setenv("MNEMOWEAVE_DAEMON_PORT", port)
    with pytest.raises(InvalidInput, match=f"daemon_port: use 0 .* got {port}"):
        load_config(home)
