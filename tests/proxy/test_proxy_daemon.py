"""The daemon runs the proxy while it serves when `proxy_upstream` is set, and stops it
when it stops."""

from __future__ import annotations

import http.client
import socket

from proxied import Daemon, wait_for
from upstream import Upstream


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def answers(port: int) -> int | None:
    """The status of GET /v1/models through the proxy on `port` (None: nothing listens)."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        connection.request("GET", "/v1/models")
        return connection.getresponse().status
    except OSError:
        return None
    finally:
        connection.close()


def test_the_daemon_runs_the_configured_proxy_and_stops_it(home, upstream: Upstream):
    port = free_port()
    with (home / "config.toml").open("a") as config:
        config.write(f'proxy_upstream = "{upstream.url}"\nproxy_port = {port}\n')
    daemon = Daemon(home)
    try:
        assert wait_for(lambda: answers(port) == 200)
        assert upstream.requests[-1]["path"] == "/v1/models"  # passed through
    finally:
        daemon.stop()
    assert daemon.process.returncode == 0
    assert answers(port) is None
    assert "mnemoweave proxy on http://127.0.0.1:" in (home / "logs/proxy.out").read_text()
