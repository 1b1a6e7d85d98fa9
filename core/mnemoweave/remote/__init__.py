"""Optional remote models: calls to an OpenAI-compatible endpoint, and the keys they send.

Off by default: nothing here runs unless `embedder = "openai"` or `distiller = "llm"` is
set. A key is never in the config file: `embed_api_key` and `llm_api_key` hold a reference,
`env:NAME` (an environment variable) or `file:PATH` (a file holding only the key), read when
a call is made; no message, log line or error names the key. Every text is cleaned
(`text.clean`: secrets redacted, <private> spans dropped) before it leaves the machine.

A call that fails (the endpoint is down, answers 4xx/5xx or something that is not the JSON
expected, or takes more than TIMEOUT seconds) raises RemoteError; the caller falls back to
its local path for that call and logs one line.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from mnemoweave.errors import MnemoweaveError
from mnemoweave.text import clean

TIMEOUT = 10.0  # seconds one remote call may take
log = logging.getLogger("mnemoweave.remote")


class RemoteError(MnemoweaveError):
    """A remote model did not answer usefully (its message names no key and no text)."""


def key(setting: str, reference: str) -> str:
    """The key a reference leads to ('' for none); RemoteError when it leads nowhere."""
    if not reference:
        return ""
    where, _, name = reference.partition(":")
    if where == "env":
        found = os.environ.get(name, "")
    else:
        try:
            found = Path(name).expanduser().read_text(encoding="utf-8")
        except OSError as exc:
            raise RemoteError(
                f"{setting}: cannot read the key file {name} ({exc.strerror})"
            ) from None
    if not found.strip():
        raise RemoteError(f"{setting}: {reference} holds no key")
    return found.strip()


def endpoint(base: str, path: str) -> str:
    """`base` (an API root such as http://localhost:11434/v1) joined with `path`."""
    parts = urlsplit(base)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise RemoteError(f"not an http(s) URL: {where(base)}")
    return base.rstrip("/") + path


def where(url: str) -> str:
    """What a message may say of a URL: its scheme, host and path (no credentials)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{host}{port}{parts.path}"


def post(url: str, body: dict[str, Any], api_key: str) -> Any:
    """POST `body` as JSON and return the JSON answer; RemoteError on any failure."""
    import httpx

    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    try:
        response = httpx.post(url, json=body, headers=headers, timeout=TIMEOUT)
    except httpx.TimeoutException:
        raise RemoteError(f"{where(url)} did not answer within {TIMEOUT:g} s") from None
    except httpx.HTTPError as exc:
        raise RemoteError(f"{where(url)} cannot be reached ({type(exc).__name__})") from None
    if response.status_code >= 400:
        raise RemoteError(f"{where(url)} answered HTTP {response.status_code}")
    try:
        return response.json()
    except ValueError:
        raise RemoteError(f"{where(url)} answered something that is not JSON") from None


def cleaned(texts: list[str]) -> list[str]:
    """The texts as they may leave the machine (an empty result keeps a placeholder, so
    the answer still lines up with the texts sent)."""
    return [clean(text) or "-" for text in texts]


def fell_back(what: str, exc: RemoteError) -> None:
    """The one log line of a remote call that failed and was done locally instead."""
    log.warning("%s failed (%s): done locally for this call", what, exc)
