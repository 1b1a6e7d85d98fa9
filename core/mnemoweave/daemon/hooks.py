"""The hooks route: hooks post `{"payload": ...}` to `/v1/hooks/{host}/{event}` and print
the `output` they get back. A hook is answered as soon as its weave is ready: its turns are
stored after the answer is sent, by the transcript follower's worker (or by the next
request, which first runs what is left), and what fails to store is spooled.

A hook sends its payload as the host wrote it (hook.py), so its strings are made
encodable here. The Claude Code plugin's hooks say so (`"via": "plugin"`) and stand aside
where a settings install of ours is active for the payload's directory: one prompt, one
memory block."""

from __future__ import annotations

import logging
from typing import Any

from mnemoweave.daemon.routes import Context, Route, add
from mnemoweave.daemon.schema import ANY, OBJECT, OPT_NUM, STR
from mnemoweave.daemon.spool import replay_spool, spooled
from mnemoweave.daemon.transcripts import Transcripts
from mnemoweave.errors import MnemoweaveError
from mnemoweave.hook import log as hook_log
from mnemoweave.hook import spool
from mnemoweave.hosts import adapters, claude_code
from mnemoweave.hosts.client import encodable
from mnemoweave.hosts.install import aside_for

log = logging.getLogger("mnemoweave.daemon")


class Hosts:
    """The daemon's host side: set up once per daemon, before it serves."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.transcripts = Transcripts(ctx)

    def start(self) -> None:
        with self.ctx.lock:
            replay_spool(self.ctx.engine)
        self.ctx.wake = lambda: self.transcripts.queue.put("")
        self.transcripts.start()

    def stop(self) -> None:
        self.transcripts.stop()
        with self.ctx.lock:  # nothing an answered hook left is lost
            self.ctx.settle()

    def hook(
        self, ctx: Context, host: str, event: str, payload: Any, via: str | None = None
    ) -> dict[str, Any]:
        """Answer first; the event's turns are stored by the worker once the answer is out
        (or by the next request, whichever comes first)."""
        payload = encodable(payload)
        if (active := aside_for(host, payload, via)) is not None:
            message = f"{host} {event}: the plugin stands aside for the hooks in {active}"
            hook_log(ctx.engine.home, message)
            return {"output": None}
        with ctx.engine.deferring(ctx.defer):  # what the weave records waits too
            handled = adapters.respond(ctx.engine, host, event, payload)
        if handled.later:
            ctx.defer(lambda: self._store(host, event, payload, handled))
        where = payload.get("transcript_path") if isinstance(payload, dict) else None
        if host == claude_code.HOST and isinstance(where, str):
            self.transcripts.follow(where)
        if spooled(ctx.engine.home):
            self.transcripts.queue.put("")  # the worker stores it, after this answer is sent
        return {"output": handled.answer}

    def _store(self, host: str, event: str, payload: Any, handled: adapters.Handled) -> None:
        """Store what an answered hook left; what fails is spooled (cleaned, as a hook that
        could not reach the daemon spools it) and stored again later: keys keep it once."""
        try:
            adapters.store(self.ctx.engine, handled)
        except Exception as exc:
            log.error("%s %s: storing after the answer failed (%s); spooled", host, event, exc)
            spool(self.ctx.engine.home, host, event, payload)


HOSTS: Hosts | None = None
# the engine's registered hosts (adapters.hosts) are checked when the hook runs
HOST = STR | {
    "description": "A registered host: claude-code, opencode, codex, gemini, dsh, proxy or "
    "a plugin's."
}


def _hook(
    ctx: Context,
    host: str,
    event: str,
    payload: Any,
    via: str | None = None,
    wait: float | None = None,  # read while the daemon warms up (warming.py) only
) -> dict[str, Any]:
    if HOSTS is None:
        raise MnemoweaveError("the daemon's host side is not started")
    return HOSTS.hook(ctx, host, event, payload, via)


add(
    Route(
        "POST",
        "/v1/hooks/{host}/{event}",
        _hook,
        "Run one host hook event on its payload; answers with the output the host reads.",
        {
            "host": HOST,
            "event": STR,
            "payload": ANY,
            "via": STR | {"description": '"plugin" from the Claude Code plugin\'s hooks.'},
            "wait": OPT_NUM
            | {"description": "Seconds a prompt's hook may wait for a daemon warming up."},
        },
        ("host", "event", "payload"),
        returns=OBJECT,
        raw=True,
    )
)


def start(ctx: Context) -> Hosts:
    global HOSTS
    HOSTS = Hosts(ctx)
    HOSTS.start()
    return HOSTS
