"""The store for one CLI command: through the daemon when one answers, else in-process.

RemoteEngine has the Engine's method names (the operations in the route table) and gives
back the same records, decoded from the wire, so a command prints the same either way.
Without a daemon the command opens the Engine itself, holding the one-writer lock; a
second in-process command waits for it a bounded time, then says who holds it.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import quote, urlencode

from mnemoweave.config import data_dir
from mnemoweave.daemon.process import LOCK_WAIT, StoreLock, daemon_pid, holder_text
from mnemoweave.daemon.routes import ROUTES, Route, operations
from mnemoweave.daemon.wire import decode, encode
from mnemoweave.errors import InvalidInput, NotFound
from mnemoweave.hosts import client
from mnemoweave.hosts.client import DaemonError
from mnemoweave.model import SessionEvent, Turn

if TYPE_CHECKING:
    from mnemoweave.engine import Engine

SESSION_EVENT_PATH = "/v1/sessions/{session}/{event}"
CLI_TIMEOUT = 600.0  # an import or a repair may take minutes; Ctrl-C is always there


def _query_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return repr(value) if isinstance(value, float) else str(value)


class RemoteEngine:
    """The Engine's operations, run by the daemon of `home`."""

    def __init__(self, home: Path, timeout: float = client.DEFAULT_TIMEOUT) -> None:
        self.home = Path(home)
        self.timeout = timeout

    def __enter__(self) -> RemoteEngine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Nothing to close: every call is its own connection."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_") or "." in name or name not in operations():
            raise AttributeError(f"{name!r} is not available through the daemon")
        return functools.partial(self.call_operation, name)

    def call_operation(self, name: str, *args: Any, **kwargs: Any) -> Any:
        """Run the operation `name` (an Engine method or "module.function") in the daemon."""
        route = operations()[name]
        names = list(route.fields)
        if len(args) > len(names):
            raise TypeError(f"{name}() takes {len(names)} arguments, got {len(args)}")
        values = dict(zip(names, args, strict=False))
        for key, value in kwargs.items():
            if key not in route.fields or key in values:
                raise TypeError(f"{name}() got an unexpected or repeated argument {key!r}")
            values[key] = value
        return self._call(route, values)

    def handle(self, event: Turn | SessionEvent) -> Any:
        """The one entry for host events, as Engine.handle."""
        if isinstance(event, Turn):
            return self.ingest(
                event.session,
                event.role,
                event.text,
                host=event.host,
                project=event.project,
                ts=event.ts,
                key=event.key,
            )
        route = next(r for r in ROUTES if r.path == SESSION_EVENT_PATH)
        fields = {"host": event.host, "project": event.project, "ts": event.ts}
        return self._call(
            route,
            {"session": event.session, "event": event.kind, "source": event.source, **fields},
        )

    def classify(self, turn: Turn) -> Any:
        return self.call_operation("classify", turn.text, role=turn.role)

    def _call(self, route: Route, values: dict[str, Any]) -> Any:
        values = {name: encode(value) for name, value in values.items()}
        path = route.path.format(
            **{name: quote(str(values.pop(name)), safe="") for name in route.path_params}
        )
        body = None
        if route.method == "GET":
            given = {k: _query_text(v) for k, v in values.items() if v is not None}
            path += f"?{urlencode(given)}" if given else ""
        else:
            body = values
        try:
            answer = client.request(self.home, route.method, path, body, self.timeout)
        except DaemonError as exc:
            if exc.status == 404:
                raise NotFound(str(exc)) from None
            if exc.status == 400:
                raise InvalidInput(str(exc)) from None
            raise
        return decode(answer.get("result"))


@contextmanager
def open_store(
    command: str = "mnemoweave", *, local: bool = False, wait: float | None = None
) -> Iterator[Engine]:
    """A RemoteEngine when the daemon answers; otherwise the Engine, in-process, while this
    process holds the one-writer lock. It waits while the lock passes from writer to writer
    (parallel commands queue up), and gives up when one holder keeps it `wait` seconds
    (default LOCK_WAIT).

    `local` commands need the store to themselves: they refuse while a daemon runs.
    """
    wait = LOCK_WAIT if wait is None else wait
    home = data_dir()
    lock = StoreLock(home)
    holder, deadline = None, time.monotonic() + wait
    while True:
        if client.running(home):
            if local:
                raise DaemonError(
                    f"`{command}` needs the store to itself and the daemon "
                    f"(pid {daemon_pid(home)}) has it open: run `mnemoweave stop` first"
                )
            # typed as the Engine it stands for: it runs the same operations, with the same
            # arguments (the route table's fields are the Engine's, tests/daemon/test_daemon_
            # contract.py), so the type checker checks every caller's call against the Engine
            yield cast("Engine", RemoteEngine(home, timeout=CLI_TIMEOUT))
            return
        if lock.acquire(command, wait=0):
            break
        if (now := client.lock_holder(home)) != holder:  # passed on: the queue moves
            holder, deadline = now, time.monotonic() + wait
        elif time.monotonic() >= deadline:
            raise DaemonError(
                f"the store is busy: {holder_text(home)} holds {lock.path} "
                f"(waited {wait:g}s); try again, or `mnemoweave stop` a daemon that hangs"
            )
        time.sleep(0.05)
    try:
        from mnemoweave.engine import Engine

        with Engine(home) as engine:
            yield engine
    finally:
        lock.release()
