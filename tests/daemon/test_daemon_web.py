"""The web page's side of the daemon: `mnemoweave ui` opens the loopback listener on
demand and prints a one-time sign-in URL; the page's files come with a strict CSP; the
sign-in code works once; writes take JSON from the page's own origin only."""

from __future__ import annotations

import http.client
import os
import socket
import subprocess
import sys
from urllib.parse import urlsplit

from running import daemon_env
from test_daemon_tcp import authorised, free_port, over_tcp

TIMEOUT = 60.0


def get(port: int, path: str, **headers: str) -> tuple[int, dict[str, str], bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        connection.request("GET", path, headers={"Host": f"127.0.0.1:{port}"} | headers)
        answer = connection.getresponse()
        return answer.status, dict(answer.getheaders()), answer.read()
    finally:
        connection.close()


def ui(home, *args: str) -> tuple[int, str]:
    """`mnemoweave ui` for `home`: (listener port, one-time code)."""
    done = subprocess.run(
        [sys.executable, "-m", "mnemoweave", "ui", *args],
        env=daemon_env(home),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=True,
    )
    login = done.stdout.split()[-1]
    parts = urlsplit(login)
    assert parts.hostname == "127.0.0.1" and parts.path == "/ui/"
    assert parts.fragment.startswith("login=") and not parts.query
    assert parts.port is not None
    return parts.port, parts.fragment.removeprefix("login=")


def test_ui_opens_the_listener_on_demand_and_serves_the_page_with_a_strict_csp(daemon):
    assert daemon.call("GET", "/v1/daemon")["tcp"] is None
    port, _ = ui(daemon.home)
    assert daemon.call("GET", "/v1/daemon")["tcp"] == f"127.0.0.1:{port}"
    assert ui(daemon.home)[0] == port  # a second call reuses the listener
    status, headers, page = get(port, "/ui/")
    assert status == 200 and headers["Content-Type"].startswith("text/html")
    csp = headers["Content-Security-Policy"]
    assert "script-src 'self'" in csp and "frame-ancestors 'none'" in csp
    assert "unsafe-inline" not in csp and "unsafe-eval" not in csp
    assert headers["X-Content-Type-Options"] == "nosniff"
    assert b'src="app.js"' in page
    status, headers, script = get(port, "/ui/app.js")
    assert status == 200 and headers["Content-Type"].startswith("text/javascript")
    assert get(port, "/")[0] == 302
    for path in ("/ui/../daemon.token", "/ui/.hidden.js", "/ui/nothing.js", "/ui/x.py"):
        assert get(port, path)[0] == 404, path
    assert get(port, "/ui/", Host=f"attacker.example:{port}")[0] == 403


def test_a_sign_in_code_is_swapped_for_the_token_once(daemon):
    port, code = ui(daemon.home)
    host = {"Host": f"127.0.0.1:{port}"}
    status, answer, _ = over_tcp(port, "POST", "/v1/ui/login", {"code": code}, **host)
    token = (daemon.home / "daemon.token").read_text().strip()
    assert (status, answer) == (200, {"result": {"token": token}})
    status, answer, _ = over_tcp(port, "POST", "/v1/ui/login", {"code": code}, **host)
    assert status == 401 and "used or has expired" in answer["error"]
    status, _, _ = over_tcp(port, "POST", "/v1/ui/login", {"code": "guess"}, **host)
    assert status == 401
    status, _, _ = over_tcp(port, "GET", "/v1/status", **host)
    assert status == 401  # the page's files and its sign-in are all that need no token


def test_writes_take_json_from_the_pages_own_origin_only(daemon):
    port, _ = ui(daemon.home)
    headers = authorised(daemon.home, port)
    body = {"text": "refused write"}
    evil = headers | {"Origin": "http://evil.example"}
    status, answer, _ = over_tcp(port, "POST", "/v1/memories", body, **evil)
    assert status == 403 and "http://evil.example" in answer["error"]
    form = headers | {"Content-Type": "text/plain"}
    assert over_tcp(port, "POST", "/v1/memories", body, **form)[0] == 415
    assert daemon.call("GET", "/v1/status")["counts"]["memories"] == 0
    own = headers | {"Origin": f"http://127.0.0.1:{port}"}
    status, answer, _ = over_tcp(port, "POST", "/v1/memories", body, **own)
    assert status == 200 and answer["result"]["action"] == "new"


def test_the_page_names_a_busy_port_and_the_daemon_serves_on(daemon):
    port = free_port()
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", port))
        taken.listen()
        done = subprocess.run(
            [sys.executable, "-m", "mnemoweave", "ui", "--port", str(port)],
            env=daemon_env(daemon.home),
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
        )
    assert done.returncode == 1 and f"127.0.0.1:{port}" in done.stderr
    assert daemon.call("GET", "/v1/daemon")["tcp"] is None
    assert daemon.call("GET", "/v1/status")["counts"]["memories"] == 0  # it serves on


def test_the_page_starts_a_daemon_when_none_runs(home):
    port, code = ui(home)
    try:
        host = {"Host": f"127.0.0.1:{port}"}
        assert over_tcp(port, "POST", "/v1/ui/login", {"code": code}, **host)[0] == 200
    finally:
        subprocess.run(
            [sys.executable, "-m", "mnemoweave", "stop"],
            env=daemon_env(home),
            capture_output=True,
            timeout=TIMEOUT,
        )
    assert not os.path.exists(home / "daemon.sock")


def test_ui_open_without_a_browser_says_so_and_prints_the_url(daemon, tmp_path):
    env = daemon_env(daemon.home) | {"BROWSER": str(tmp_path / "no-such-browser")}
    for display in ("DISPLAY", "WAYLAND_DISPLAY"):
        env.pop(display, None)
    done = subprocess.run(
        [sys.executable, "-m", "mnemoweave", "ui", "--open"],
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert done.returncode == 0, done.stderr
    assert "/ui/#login=" in done.stdout.split()[-1]
    assert "no browser could be opened here" in done.stderr
