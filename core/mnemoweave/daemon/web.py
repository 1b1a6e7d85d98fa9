"""The web page's side of the loopback listener: its files, its sign-in, its guards.

`mnemoweave ui` asks the daemon (`POST /v1/ui`) to open the loopback listener if it is not
open yet, and gets a one-time sign-in URL, `http://127.0.0.1:PORT/ui/#login=CODE`. The
code travels in the fragment, which the browser never sends or logs; the page swaps it
once (`POST /v1/ui/login`) for the data dir's bearer token, which every API request then
carries, and drops the fragment from its history entry. A code works once, for
LOGIN_SECONDS.

The page's files (under `mnemoweave/web/`) are served under `/ui/` to anyone with a
loopback Host header: they hold no data. Every answer carries a strict
Content-Security-Policy (scripts and styles from this origin only, nothing inline, no
framing). A write (any method but GET) must send JSON, and a browser's Origin must be
this listener's own: a form or a page from elsewhere gets a 415 or a 403.
"""

from __future__ import annotations

import hmac
import secrets
import threading
import time
from collections.abc import Callable
from importlib import resources
from typing import Any

from mnemoweave.daemon.tcp import HOST

LOGIN_SECONDS = 600.0
CODE_BYTES = 24
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
HEADERS = {  # on every answer of the listener, API and files alike
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}
TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".txt": "text/plain; charset=utf-8",
    ".svg": "image/svg+xml",
    ".png": "image/png",
}
PAGE_PREFIX = "/ui/"
UNSIGNED = {("POST", "/v1/ui/login")}  # the one API request that needs no token


class Logins:
    """One-time sign-in codes: each works once, until it expires."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._codes: dict[str, float] = {}  # code -> expiry
        self._lock = threading.Lock()

    def mint(self) -> str:
        code = secrets.token_urlsafe(CODE_BYTES)
        with self._lock:
            now = self._clock()
            self._codes = {c: end for c, end in self._codes.items() if end > now}
            self._codes[code] = now + LOGIN_SECONDS
        return code

    def redeem(self, code: str) -> bool:
        """True once for a code minted and not expired; the code is spent either way."""
        with self._lock:
            given = code.encode("utf-8", "replace")
            found = next((c for c in self._codes if hmac.compare_digest(c.encode(), given)), None)
            expiry = self._codes.pop(found, 0.0) if found is not None else 0.0
            return expiry > self._clock()


def page_file(path: str) -> tuple[int, dict[str, str], bytes]:
    """The answer to a GET of one of the page's paths (`/`, `/ui`, `/ui/...`)."""
    if path in ("/", "/ui"):
        return 302, {"Location": PAGE_PREFIX}, b""
    name = path[len(PAGE_PREFIX) :] or "index.html"
    parts = name.split("/")
    suffix = "." + name.rpartition(".")[2] if "." in parts[-1] else ""
    if any(part in ("", ".", "..") or part.startswith(".") for part in parts) or (
        suffix not in TYPES
    ):
        return 404, {"Content-Type": TYPES[".txt"]}, b"not found\n"
    found = resources.files("mnemoweave").joinpath("web", *parts)
    if not found.is_file():
        return 404, {"Content-Type": TYPES[".txt"]}, b"not found\n"
    return 200, {"Content-Type": TYPES[suffix]}, found.read_bytes()


def is_page(method: str, path: str) -> bool:
    return method in ("GET", "HEAD") and (path in ("/", "/ui") or path.startswith(PAGE_PREFIX))


def write_refusal(method: str, headers: Any, port: int) -> tuple[int, str] | None:
    """Why a write is refused (status, one line), or None: JSON only, and a browser's Origin
    must be this listener's."""
    if method in ("GET", "HEAD"):
        return None
    origin = (headers.get("Origin") or "").strip().lower()
    if origin and origin not in {f"http://{HOST}:{port}", f"http://localhost:{port}"}:
        return 403, f"requests from {origin} are refused: only this page may write"
    kind = (headers.get("Content-Type") or "").split(";")[0].strip().lower()
    if kind != "application/json":
        return 415, "writes take JSON only (Content-Type: application/json)"
    return None


class Web:
    """What `POST /v1/ui` and `/v1/ui/login` need of the daemon: its listener, opened on
    demand (`listen(port)` returns the address it serves), its token and the codes."""

    def __init__(self, listen: Callable[[int], str], token: Callable[[], str]) -> None:
        self._listen = listen
        self._token = token
        self.logins = Logins()

    def open(self, port: int) -> dict[str, Any]:
        address = self._listen(port)
        base = f"http://{address}{PAGE_PREFIX}"
        return {
            "url": base,
            "login": f"{base}#login={self.logins.mint()}",
            "expires_in": LOGIN_SECONDS,
        }

    def login(self, code: str) -> dict[str, str] | None:
        return {"token": self._token()} if self.logins.redeem(code) else None
