"""The proxy's memory: the daemon, reached over its Unix socket (mnemoweave.hosts.client), never
the store itself (the daemon holds the store's lock). The proxy is a host like the others:
it posts its events to the daemon's hooks route, where its adapter (hosts/proxy.py) turns
them into turns and session events and answers first, stores after.

- Weave: the context for a prompt (the `prompt` event), asked of the daemon within a
  budget (150 ms, or MNEMOWEAVE_PROXY_BUDGET_MS); over budget or with no daemon the
  request goes upstream untouched, and a daemon that is not there is started in the
  background (client.ensure_daemon). What a conversation was given is kept here and sent
  with each of its later requests (the client's history does not hold it), each line once;
  the first request of a conversation gets the brief (brief.py), kept while later blocks
  come and go.
- Store: the prompt (stored by the daemon once it answered the `prompt` event), then the
  prompt again, the reply and tool lines after the response (`reply`, by one worker
  thread), keyed so that a turn sent again is stored once. What the daemon did not take is
  sent again once (after starting a daemon if none answers), then logged as lost.
- Distill: a conversation quiet for `idle_seconds`, or one every LONG_TURNS stored turns,
  gets the `idle` event, as a host's stop hook sends it.
- Sessions: the X-Mnemoweave-Session header, else a hash of the system prompt and the
  first user message.
"""

from __future__ import annotations

import hashlib
import logging
import os
import queue
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any

from mnemoweave.hosts import client
from mnemoweave.proxy.turns import Conversation, Reply, tool_line
from mnemoweave.scope import resolve_scope

log = logging.getLogger("mnemoweave.proxy")

HOST = "proxy"  # the host the daemon knows the proxy as (hosts/proxy.py)
_HOOK = f"/v1/hooks/{HOST}/"
SESSION_HEADER = "x-mnemoweave-session"
PROJECT_HEADER = "x-mnemoweave-project"
BUDGET_SECONDS = 0.15
STORE_TIMEOUT = 10.0  # seconds one store request may take
START_BUDGET = 30.0  # seconds a daemon started by the proxy may take to answer
LONG_TURNS = 40  # stored turns after which a conversation is distilled without a pause
KEPT_SESSIONS = 1000  # conversations whose woven context is kept (least recent dropped)
KEPT_CHARACTERS = 16_000  # of one conversation's woven context (oldest blocks dropped)


def budget() -> float:
    """The weave's budget in seconds; MNEMOWEAVE_PROXY_BUDGET_MS overrides it."""
    given = os.environ.get("MNEMOWEAVE_PROXY_BUDGET_MS", "")
    return int(given) / 1000 if given.isdigit() else BUDGET_SECONDS


def _key(session: str, talk: Conversation, role: str, text: str) -> str:
    """A turn's key: the same turn of the same request, sent again, is stored once."""
    return f"{HOST}:{session}:{talk.position}:{role}:{digest(text)}"


def _payload(
    session: str, project: str, turns: list[tuple[str, str, str]] | None
) -> dict[str, Any]:
    """The body of a post to the hooks route (hosts/proxy.py reads the payload)."""
    payload: dict[str, Any] = {"session": session, "project": project}
    if turns is not None:
        payload["turns"] = [{"role": r, "text": t, "key": k} for r, t, k in turns]
    return {"payload": payload}


def _nothing() -> None:
    """No job."""


def digest(*parts: str) -> str:
    return hashlib.sha256("\x00".join(parts).encode("utf-8", "replace")).hexdigest()[:24]


class Memory:
    """One proxy's link to the daemon of data dir `home`."""

    def __init__(
        self, home: str, project: str | None, project_from_header: bool, idle_seconds: float
    ) -> None:
        self.home = home
        self.project = project
        self.project_from_header = project_from_header
        self.idle_seconds = idle_seconds
        self.budget = budget()
        self._given: OrderedDict[str, list[str]] = OrderedDict()  # session -> woven blocks
        self._lock = threading.Lock()
        self._jobs: queue.Queue[Callable[[], None] | None] = queue.Queue()
        self._quiet: dict[str, tuple[float, str]] = {}  # session -> (last activity, project)
        self._stored: dict[str, int] = {}  # session -> turns stored since its last distill
        self._waking = threading.Event()
        self._worker = threading.Thread(target=self._work, name="proxy-memory", daemon=True)
        self._worker.start()

    def before(self, headers: Mapping[str, str], talk: Conversation) -> tuple[str, str, str]:
        """(session, project, context) of a request about to go upstream (lower-case header
        names); it may wait for the daemon up to the weave's budget."""
        session, project = self.session(headers, talk), self.project_of(headers)
        return session, project, self.context(session, project, talk)

    # --- who and where -----------------------------------------------------------------------

    def session(self, headers: Mapping[str, str], talk: Conversation) -> str:
        given = headers.get(SESSION_HEADER, "").strip()
        return given or f"proxy-{digest(talk.system, talk.first)}"

    def project_of(self, headers: Mapping[str, str]) -> str:
        given = headers.get(PROJECT_HEADER, "").strip() if self.project_from_header else ""
        return resolve_scope(given) if given else (self.project or "")

    # --- the weave ---------------------------------------------------------------------------

    def context(self, session: str, project: str, talk: Conversation) -> str:
        """What goes before the model in this request: what the conversation was given so
        far, and the weave for a new prompt ('' when there is nothing)."""
        woven = self._weave(session, project, talk) if talk.prompt.strip() else ""
        with self._lock:
            blocks = self._given.pop(session, [])
            if woven:
                blocks.append(woven)
            while len(blocks) > 2 and sum(map(len, blocks)) > KEPT_CHARACTERS:
                blocks.pop(1)  # the first holds the brief: the oldest after it goes
            if blocks:
                self._given[session] = blocks
            while len(self._given) > KEPT_SESSIONS:
                self._given.popitem(last=False)
        return "\n\n".join(blocks)

    def _weave(self, session: str, project: str, talk: Conversation) -> str:
        prompt = [("user", talk.prompt, _key(session, talk, "user", talk.prompt))]
        body = _payload(session, project, prompt)
        try:
            answer = client.request(self.home, "POST", _HOOK + "prompt", body, self.budget)
        except client.DaemonError as exc:
            log.warning("weave skipped, the request goes upstream untouched: %s", exc)
            if exc.status is None:
                self._wake()
            return ""
        output = answer.get("output")  # the hooks route answers with the output itself
        text = output.get("context") if isinstance(output, dict) else ""
        return text if isinstance(text, str) else ""

    def _wake(self) -> None:
        """Start a daemon in the background, once at a time."""
        if self._waking.is_set():
            return
        self._waking.set()

        def start() -> None:
            try:
                if not client.ensure_daemon(self.home, START_BUDGET):
                    log.warning("no daemon answered within %gs of starting one", START_BUDGET)
            finally:
                self._waking.clear()

        threading.Thread(target=start, name="proxy-wake", daemon=True).start()

    # --- the store ---------------------------------------------------------------------------

    def store(self, session: str, project: str, talk: Conversation, reply: Reply | None) -> None:
        """Store an answered exchange after the response: the prompt, then (when the reply
        arrived whole) its text and tool lines (made into lines by the worker)."""
        self._jobs.put(lambda: self._store(session, project, talk, reply))

    def _store(self, session: str, project: str, talk: Conversation, reply: Reply | None) -> None:
        turns = [("user", talk.prompt, _key(session, talk, "user", talk.prompt))]
        if reply is not None:
            turns.append(("assistant", reply.text, _key(session, talk, "assistant", reply.text)))
            for number, (name, arguments) in enumerate(reply.calls):
                line = tool_line(name, arguments)
                turns.append(("tool", line, f"{HOST}:{session}:{talk.position}:tool:{number}"))
        said = [(role, text, key) for role, text, key in turns if text.strip()]
        if said and self._post(_HOOK + "reply", _payload(session, project, said)):
            self._stored[session] = self._stored.get(session, 0) + len(said)
        self._quiet[session] = (time.monotonic(), project)
        if self._stored.get(session, 0) >= LONG_TURNS:
            self._distill(session, project)

    def _post(self, path: str, body: dict[str, Any]) -> bool:
        """Send one request; once more after starting a daemon when none answered. False,
        and one line in the log (no text, no header), when it was not taken."""
        for attempt in (1, 2):
            try:
                client.request(self.home, "POST", path, body, timeout=STORE_TIMEOUT)
                return True
            except client.DaemonError as exc:
                refused = exc.status is not None and exc.status < 500
                if refused or attempt == 2:
                    what, session = path.rsplit("/", 1)[-1], body["payload"]["session"]
                    log.error("%s of session %s not stored: %s", what, session, exc)
                    return False
                if exc.status is None:
                    client.ensure_daemon(self.home, START_BUDGET)
        return False

    def _distill(self, session: str, project: str) -> None:
        self._stored.pop(session, None)
        self._quiet.pop(session, None)
        self._post(_HOOK + "idle", _payload(session, project, None))

    def _work(self) -> None:
        """Run the queued stores in order; distill the conversations gone quiet."""
        while True:
            try:
                job = self._jobs.get(timeout=min(1.0, self.idle_seconds))
            except queue.Empty:
                job = _nothing  # a pause: only look for quiet conversations
            if job is None:
                return
            try:
                job()
                now = time.monotonic()
                for session, (last, project) in list(self._quiet.items()):
                    if now - last >= self.idle_seconds:
                        self._distill(session, project)
            except Exception:
                log.exception("the memory worker failed")

    def close(self, within: float = 10.0) -> None:
        """Store what is queued and distill every conversation not yet distilled."""

        def flush() -> None:
            for session, (_, project) in list(self._quiet.items()):
                self._distill(session, project)

        self._jobs.put(flush)
        self._jobs.put(None)
        self._worker.join(timeout=within)
