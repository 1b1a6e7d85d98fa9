"""The web UI as the browser tests drive it: a data dir seeded in-process, the daemon's
loopback listener opened by `mnemoweave ui --port P` (which prints the one-time sign-in
URL), Chromium (the Debian package, /usr/bin/chromium) through Playwright's sync API, and
what a test collects from a page: console errors, page errors, CSP violations, dialogs.

Every wait is bounded: Playwright waits at most WAIT_MS, subprocesses UI_WITHIN seconds,
requests TIMEOUT seconds.
"""

from __future__ import annotations

import http.client
import json
import os
import re
import socket
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypedDict

from mnemoweave.hosts import client

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
WAIT_MS = 15_000  # the longest any Playwright wait may take
UI_WITHIN = 60.0  # seconds `mnemoweave ui` may take (it may start the daemon)
TIMEOUT = 15.0  # seconds of one HTTP request to the listener
LOGIN_URL = re.compile(r"http://127\.0\.0\.1:(\d+)/ui/#login=[A-Za-z0-9_\-]+")
PAGES = (
    "memories",
    "memory-detail",
    "entities",
    "entity",
    "review",
    "sessions",
    "skills",
    "status",
    "files",
)
# what shows once a page has loaded (selectors of app.js's header comment)
NAV = {
    "memories": "[data-test=memory-row]",
    "entities": "[data-test=entity-row]",
    "review": "[data-test=card-row]",
    "sessions": "[data-test=session-row]",
    "skills": "[data-test=skill-row]",
    "status": "[data-test=status-section][data-id=status] table, "
    "[data-test=status-section][data-id=status] dl",
    "files": "[data-test=export]",
}

PROJECT = "github.com/acme/orchard"
SESSION = "web-review-1"
# turns whose distillation proposes one card each (en and zh), then small talk
CARD_TURNS = (
    ("user", "以后代码注释都用英文，commit message 也用英文。"),
    ("assistant", "好的。"),
    (
        "user",
        "The upload hang was caused by httpx having no timeout; setting it to 10 seconds fixed it.",
    ),
    ("assistant", "Noted."),
    (
        "user",
        "We decided to use PostgreSQL 15 for the billing worker because it supports "
        "logical replication.",
    ),
    ("user", "Always run make lint before pushing a branch in this repository."),
    (
        "user",
        "The nightly export job failed with OOMKilled when the batch had more than 5000 "
        "rows; splitting into chunks of 500 fixed it.",
    ),
    ("assistant", "Noted, thanks."),
)
CARDS = 4  # pending cards the turns above propose at least
MEMORIES = {
    "zh": "深圳办公室的门禁卡每季度更换一次，新卡找行政部的王磊领取。",
    "en": "The staging database password rotates every Monday; fetch it from the vault "
    "under ops/staging/db.",
    "forget": "The legacy FTP importer was switched off in March; nobody should restart it.",
    "xss": "<script>alert(1)</script>",
}
SEARCHES = {"zh": "门禁卡 更换", "en": "staging database password"}


class Taught(TypedDict):
    """A skill as `Engine.teach_skill` takes it."""

    name: str
    summary: str
    triggers: list[str]
    steps: list[str]
    source_urls: list[str]


SKILL: Taught = {
    "name": "release-checklist",
    "summary": "How a release is cut: version bump, changelog, tag, publish",
    "triggers": ["release", "发布"],
    "steps": ["bump the version", "update the changelog", "tag and push", "publish"],
    "source_urls": ["https://example.com/release"],
}


TEAM_MEMORY = (
    "fact",
    "The billing export runs nightly at 02:00 UTC from the reports replica",
    ("alice@acme.dev",),
    1_700_000_000.0,
    1_700_000_000.0,
)


def seed(home: Path) -> dict[str, Any]:
    """Fill the data dir in-process (before the daemon starts: it holds the store lock):
    memories in English and Chinese, one holding a script tag, a filler per project, a
    session whose distillation leaves CARDS pending cards, a woven prompt, a skill. The ids
    by name, and the pending cards' ids."""
    from mnemoweave import Engine
    from mnemoweave.store import team as team_table
    from mnemoweave.store.db import transaction
    from mnemoweave.store.team import TeamRecord

    with (home / "config.toml").open("a", encoding="utf-8") as config:  # a team, not reachable
        config.write('team_url = "http://127.0.0.1:9"\nteam_token = "mwt_web"\n')
    with Engine(home) as engine:
        with transaction(engine.db) as db:  # what an earlier sync mirrored
            team_table.upsert_mirror(db, [TeamRecord("0" * 32, PROJECT, *TEAM_MEMORY)])
        ids = {
            name: engine.remember(text, kind="fact", project=PROJECT).id
            for name, text in MEMORIES.items()
        }
        engine.remember("Prefer small commits with imperative subjects.", kind="pref", project="")
        for role, text in CARD_TURNS:
            engine.ingest(SESSION, role, text, host="claude-code", project=PROJECT)
        engine.distill()
        cards = [card.id for card in engine.pending(limit=50)]
        engine.weave("why did the upload hang?", session=SESSION, project=PROJECT, record=True)
        engine.teach_skill(**SKILL)
    assert len(cards) >= CARDS, f"distill proposed {cards}, expected {CARDS} cards or more"
    return ids | {"cards": cards}


def expect() -> Any:
    """Playwright's `expect`, every assertion waiting at most WAIT_MS."""
    from playwright.sync_api import expect as playwright_expect

    playwright_expect.set_options(timeout=WAIT_MS)
    return playwright_expect


def open_page(page: Any, name: str) -> None:
    """Follow the nav link of page `name` and wait for its content to show."""
    page.locator(f"a[data-nav={name}]").click()
    expect()(page.locator(f"a[data-nav={name}]")).to_have_class(re.compile(r"\bactive\b"))
    page.locator(NAV[name]).first.wait_for(state="visible")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def mnemoweave_cli() -> list[str]:
    script = Path(sys.executable).with_name("mnemoweave")
    return [str(script)] if script.is_file() else [sys.executable, "-m", "mnemoweave"]


def login_url(env: dict[str, str], port: int) -> str:
    """`mnemoweave ui --port P`: the one-time sign-in URL it prints."""
    done = subprocess.run(
        [*mnemoweave_cli(), "ui", "--port", str(port)],
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=UI_WITHIN,
        check=False,
    )
    assert done.returncode == 0, f"mnemoweave ui exited {done.returncode}: {done.stderr}"
    found = LOGIN_URL.search(done.stdout)
    assert found, f"mnemoweave ui printed no sign-in URL: {done.stdout!r} {done.stderr!r}"
    assert int(found.group(1)) == port, f"asked for port {port}, got {found.group(0)}"
    return found.group(0)


def over_tcp(
    port: int, method: str, path: str, body: Any = None, **headers: str
) -> tuple[int, Any]:
    """One request to the listener (plain http.client): the status and the JSON answer."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=TIMEOUT)
    try:
        data = None if body is None else json.dumps(body).encode()
        connection.request(method, path, body=data, headers=headers)
        answer = connection.getresponse()
        raw = answer.read()
    finally:
        connection.close()
    try:
        return answer.status, json.loads(raw)
    except ValueError:
        return answer.status, raw.decode("utf-8", "replace")


def api(home: Path, method: str, path: str, body: Any = None) -> Any:
    """One API call over the Unix socket: its `result`."""
    return client.request(home, method, path, body, timeout=TIMEOUT)["result"]


@dataclass
class UI:
    """A seeded data dir whose daemon runs, and how to sign a page in."""

    home: Path
    env: dict[str, str]
    port: int
    ids: dict[str, Any]
    shots: Path

    def login_url(self) -> str:
        return login_url(self.env, self.port)

    def token(self) -> str:
        return (self.home / "daemon.token").read_text(encoding="utf-8").strip()

    def call(self, method: str, path: str, body: Any = None) -> Any:
        return api(self.home, method, path, body)


@dataclass
class Watch:
    """What a page did that a test must see: console errors, uncaught errors, CSP
    violations (as the browser reports them to the page), dialogs (dismissed)."""

    console: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)

    def attach(self, page: Any) -> None:
        page.on("console", self._console)
        page.on("pageerror", lambda error: self.errors.append(str(error)))
        page.on("dialog", self._dialog)

    def _console(self, message: Any) -> None:
        if message.type == "error":
            self.console.append(message.text)

    def _dialog(self, dialog: Any) -> None:
        self.dialogs.append(f"{dialog.type}: {dialog.message}")
        dialog.dismiss()

    def csp(self, page: Any) -> list[str]:
        """The CSP violations the page saw (recorded by CSP_WATCH)."""
        return list(page.evaluate("() => window.__cspViolations || []"))

    def problems(self, page: Any) -> list[str]:
        return self.console + self.errors + [f"CSP: {v}" for v in self.csp(page)]


# Runs before the page's own scripts (Playwright injects it; it is no inline script of the
# page, so the CSP does not apply to it): the page's CSP violations, as reported to it.
CSP_WATCH = """
window.__cspViolations = [];
document.addEventListener('securitypolicyviolation', (e) => {
  window.__cspViolations.push(e.violatedDirective + ' ' + (e.blockedURI || '') + ' '
    + (e.sourceFile || '') + ':' + (e.lineNumber || 0));
});
"""


def screenshot(page: Any, shots: Path, name: str) -> Path:
    """The page, full length, as `shots/NAME.png`."""
    assert name in PAGES, name
    shots.mkdir(parents=True, exist_ok=True)
    path = shots / f"{name}.png"
    page.screenshot(path=str(path), full_page=True, timeout=WAIT_MS)
    return path


def screenshots_dir(default: Path) -> Path:
    given = os.environ.get("MNEMOWEAVE_SCREENSHOTS")
    return Path(given) if given else default
