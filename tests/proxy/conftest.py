"""Fixtures: a data dir with a short path and a real daemon on it, a fake upstream, and a
proxy process in front of it (see proxied.py and upstream.py)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from proxied import BUDGET_MS, Daemon, Proxy, new_home, stop_any_daemon
from upstream import Upstream


@pytest.fixture
def home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The test's data dir; a daemon a proxy woke for it is stopped when the test ends."""
    path = new_home(tmp_path_factory)
    yield path
    stop_any_daemon(path)


@pytest.fixture
def daemon(home: Path) -> Iterator[Daemon]:
    running = Daemon(home)
    yield running
    running.stop()  # and a daemon the proxy woke meanwhile: `home` stops it


@pytest.fixture
def upstream() -> Iterator[Upstream]:
    fake = Upstream()
    yield fake
    fake.stop()


@pytest.fixture
def start_proxy(home: Path, upstream: Upstream) -> Iterator[Callable[..., Proxy]]:
    """start_proxy(*args, **env): a proxy of `home` in front of `upstream`."""
    started: list[Proxy] = []

    def start(*args: str, **settings: str) -> Proxy:
        settings.setdefault("MNEMOWEAVE_PROXY_BUDGET_MS", BUDGET_MS)
        proxy = Proxy(home, upstream.url, *args, **settings)
        started.append(proxy)
        return proxy

    yield start
    for proxy in started:
        proxy.stop()


@pytest.fixture
def proxy(start_proxy: Callable[..., Proxy], daemon: Daemon) -> Iterator[Proxy]:
    running = start_proxy()
    yield running
    running.stop()  # before the daemon stops: its last distill reaches that daemon
