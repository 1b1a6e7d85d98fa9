"""Fixtures for the browser tests of the web UI (see webui.py).

`ui` is one seeded data dir per module with its daemon running (started and stopped with
tests/daemon/running.py's helpers, HOME temporary too) and its loopback listener open on a
free port; `browser` one Chromium per module; `page` a fresh browser context per test,
signed in through the one-time URL `mnemoweave ui --port P` printed, with a `Watch` of its
console errors, page errors, CSP violations and dialogs (`watch`).

These tests need /usr/bin/chromium and the `playwright` package: without them they FAIL,
saying what is missing, unless MNEMOWEAVE_SKIP_BROWSER=1 (then they are skipped).
Screenshots go to $MNEMOWEAVE_SCREENSHOTS when set, else to a pytest temp dir.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

# running.py sits in tests/daemon, which pytest puts on sys.path only for its own tests
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "daemon"))

from running import daemon_env, make_home, start_daemon  # noqa: E402
from webui import (  # noqa: E402
    CHROMIUM,
    CHROMIUM_ARGS,
    CSP_WATCH,
    UI,
    WAIT_MS,
    Watch,
    free_port,
    screenshots_dir,
    seed,
)

HERE = Path(__file__).resolve().parent
# read now: the autouse data-dir fixture clears MNEMOWEAVE_* from each test's environment
SKIP = os.environ.get("MNEMOWEAVE_SKIP_BROWSER") == "1"
SHOTS = os.environ.get("MNEMOWEAVE_SCREENSHOTS")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "browser: drives the web UI in Chromium (MNEMOWEAVE_SKIP_BROWSER=1 skips)"
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if item.path.is_relative_to(HERE):
            item.add_marker(pytest.mark.browser)
            if SKIP:
                item.add_marker(pytest.mark.skip(reason="MNEMOWEAVE_SKIP_BROWSER=1"))


def _missing() -> str | None:
    """What the browser tests lack, or None."""
    if not os.access(CHROMIUM, os.X_OK):
        return f"no Chromium at {CHROMIUM} (apt-get install -y chromium)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "the playwright package is not installed (.venv/bin/pip install playwright)"
    return None


@pytest.fixture(scope="session")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = Path(SHOTS) if SHOTS else screenshots_dir(tmp_path_factory.mktemp("screenshots"))
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.fixture(scope="module")
def ui(tmp_path_factory: pytest.TempPathFactory, shots: Path) -> Iterator[UI]:
    home = make_home(tmp_path_factory)
    user_home = tmp_path_factory.mktemp("user")
    with pytest.MonkeyPatch.context() as mp:  # the module's fixtures run before the autouse one
        for name in [n for n in os.environ if n.startswith("MNEMOWEAVE_")]:
            mp.delenv(name)
        mp.setenv("MNEMOWEAVE_HOME", str(home))
        mp.setenv("MNEMOWEAVE_MODELS", str(home.with_name(f"{home.name}-models")))
        mp.setenv("HOME", str(user_home))
        ids = seed(home)
    port = free_port()
    running = start_daemon(home, HOME=str(user_home))
    try:
        yield UI(home, daemon_env(home, HOME=str(user_home)), port, ids, shots)
    finally:
        running.stop()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    missing = _missing()
    if missing:
        pytest.fail(f"the browser tests cannot run: {missing}; MNEMOWEAVE_SKIP_BROWSER=1 skips")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(
            executable_path=CHROMIUM, args=CHROMIUM_ARGS, timeout=WAIT_MS
        )
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture
def watch() -> Watch:
    return Watch()


@pytest.fixture
def page(browser: Any, ui: UI, watch: Watch) -> Iterator[Any]:
    """A new context's page, signed in (the sign-in URL opened, the first page shown)."""
    context = browser.new_context(viewport={"width": 1280, "height": 900}, locale="en-US")
    context.set_default_timeout(WAIT_MS)
    context.set_default_navigation_timeout(WAIT_MS)
    context.add_init_script(CSP_WATCH)
    opened = context.new_page()
    watch.attach(opened)
    try:
        opened.goto(ui.login_url(), wait_until="load")
        opened.locator("a[data-nav]").first.wait_for(state="visible")
        yield opened
    finally:
        context.close()
