"""The daemon: one warm Engine behind the HTTP JSON API on the data dir's Unix socket.

`serve(home)` takes the one-writer lock (a second daemon refuses), writes the pid file,
binds `daemon.sock` (mode 0600), where hooks are taken at once while it warms the engine
(store, models and index, jieba, the classifier: warming.py), then replays the spool, opens
the loopback port when `daemon_port` is set, and serves requests on threads, engine calls
one at a time; once serving, it embeds what its vector index lacks after a crash. SIGTERM
or SIGINT, or `daemon_idle_minutes` without a request, stops it gracefully: no new
connections, in-flight requests finish, the socket and pid file go.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import socket
import socketserver
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from mnemoweave import __version__
from mnemoweave.config import load_config
from mnemoweave.daemon import remote_work, tcp, team, warming, web
from mnemoweave.daemon.idle import IdleWork
from mnemoweave.daemon.process import LOCK_WAIT, StoreLock, holder_text, remove_pid, write_pid
from mnemoweave.daemon.routes import ApiError, Context, respond
from mnemoweave.hosts.client import DAEMON_ROLE, LOG_NAME, DaemonError, lock_holder, socket_path
from mnemoweave.store.private import make_dir

log = logging.getLogger("mnemoweave.daemon")
MAX_BODY = 64 * 1024 * 1024
SOCKET_PATH_MAX = 107  # sun_path holds 108 bytes on Linux (104 on macOS), NUL included
MEND_PAUSE = 0.01  # seconds the mending thread lets requests have the engine between batches
PROXY_STOP = 10.0  # seconds the proxy may take to stop before it is killed
TICK = 0.1  # how often the main thread looks at the stop flag and the idle timer


class DaemonState:
    """What `GET /v1/daemon` (and `mnemoweave status`) reports, kept thread-safe."""

    def __init__(self, home: Path, idle_minutes: float) -> None:
        self.home = home
        self.idle_minutes = idle_minutes
        self.started = time.time()
        self.total = self.refused = self.failed = self.active = 0
        self.last_error: dict[str, Any] | None = None
        self.tcp = self.tcp_error = ""  # the loopback listener's address, or why there is none
        self._last_activity = time.monotonic()
        self._lock = threading.Lock()

    def begin(self) -> None:
        with self._lock:
            self.active += 1
            self._last_activity = time.monotonic()

    def end(self, status: int, payload: Any, request: str) -> None:
        with self._lock:
            self.active -= 1
            self.total += 1
            self._last_activity = time.monotonic()
            if 400 <= status < 500:
                self.refused += 1
            elif status >= 500:
                self.failed += 1
                message = payload.get("error", "") if isinstance(payload, dict) else ""
                self.last_error = {"time": time.time(), "route": request, "message": message}

    def idle_seconds(self) -> float:
        with self._lock:
            return 0.0 if self.active else time.monotonic() - self._last_activity

    def snapshot(self) -> dict[str, Any]:
        """Called from within a request, which is why `in_flight` leaves one out."""
        with self._lock:
            return {
                "pid": os.getpid(),
                "started": self.started,
                "uptime": round(time.time() - self.started, 3),
                "socket": str(socket_path(self.home)),
                "home": str(self.home),
                "idle_minutes": self.idle_minutes,
                "requests": {
                    "total": self.total,
                    "refused": self.refused,
                    "failed": self.failed,
                    "in_flight": max(0, self.active - 1),
                },
                "last_error": self.last_error,
                "tcp": self.tcp or None,
                "tcp_error": self.tcp_error or None,
                "log": str(self.home / LOG_NAME),
            }


class _Handler(BaseHTTPRequestHandler):
    server: _Server | _TcpServer
    protocol_version = "HTTP/1.0"  # one request per connection, closed after the answer
    server_version = f"mnemoweave/{__version__}"
    timeout = 10  # a client that stops sending cannot hold a thread (and shutdown) for long

    def _serve(self) -> None:
        state, ctx = self.server.state, self.server.ctx
        # http.server reads the request line as Latin-1; a raw UTF-8 path is taken as UTF-8
        target = self.path.encode("latin-1").decode("utf-8", "replace")
        if ctx is None:  # warming up: not counted (a refusal to wait is not a failure)
            status, payload = self._warming(target)
            data = json.dumps(payload, ensure_ascii=False).encode("utf-8")
            return self._send(status, {"Content-Type": "application/json; charset=utf-8"}, data)
        state.begin()
        status, payload = 500, {"error": "internal error"}
        try:
            status, payload = self._respond(ctx, target)
        except ApiError as exc:
            status, payload = exc.status, {"error": str(exc)}
        finally:
            state.end(status, payload, f"{self.command} {target.split('?')[0]}")
        data = json.dumps(payload, ensure_ascii=False).encode("utf-8")
        self._send(status, {"Content-Type": "application/json; charset=utf-8"}, data)
        if ctx.later:  # the answer is out: what the handler left for later can run now
            self.wfile.flush()
            ctx.wake()

    def _send(self, status: int, headers: dict[str, str], data: bytes) -> None:
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        if status == 401:
            self.send_header("WWW-Authenticate", "Bearer")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def _respond(self, ctx: Context, target: str) -> tuple[int, Any]:
        return respond(ctx, self.command, target, self._body())

    def _warming(self, target: str) -> tuple[int, Any]:
        try:
            return warming.answer(self.server.state.home, self.command, target, self._body())
        except ApiError as exc:
            return exc.status, {"error": str(exc)}

    def _body(self) -> bytes:
        text = self.headers.get("Content-Length") or "0"
        if not text.isdigit():
            raise ApiError(400, f"bad Content-Length {text!r}")
        if int(text) > MAX_BODY:
            raise ApiError(413, f"the request body exceeds {MAX_BODY} bytes")
        return self.rfile.read(int(text)) if int(text) else b""

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _serve

    def log_message(self, format: str, *args: Any) -> None:
        """Requests are counted, not logged (a Unix socket peer has no address to log)."""


class _TcpHandler(_Handler):
    """The same API on the loopback port, for requests that pass the access checks, and
    the web page's files (see web.py)."""

    server: _TcpServer

    def _serve(self) -> None:
        path = urlsplit(self.path).path
        if not web.is_page(self.command, path):
            return super()._serve()
        refused = tcp.refusal(self.headers, self.server.server_address[1], None)
        if refused is not None:
            status, line = refused
            self._send(status, {"Content-Type": web.TYPES[".txt"]}, f"{line}\n".encode())
            return None
        self._send(*web.page_file(path))
        return None

    do_GET = do_HEAD = do_POST = do_PUT = do_PATCH = do_DELETE = _serve

    def _send(self, status: int, headers: dict[str, str], data: bytes) -> None:
        super()._send(status, web.HEADERS | headers, data)

    def _respond(self, ctx: Context, target: str) -> tuple[int, Any]:
        port = self.server.server_address[1]
        signed = (self.command, urlsplit(target).path) not in web.UNSIGNED
        refused = tcp.refusal(self.headers, port, self.server.token if signed else None)
        refused = refused or web.write_refusal(self.command, self.headers, port)
        if refused is not None:
            raise ApiError(*refused)
        return super()._respond(ctx, target)


class _Serving(socketserver.ThreadingMixIn):
    daemon_threads = False  # in-flight requests finish before the daemon exits
    block_on_close = True
    request_queue_size = socket.SOMAXCONN  # a burst of hooks and CLI calls waits, not fails
    state: DaemonState
    ctx: Context | None

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A connection that broke (a client gone before its answer): logged, not printed."""
        log.warning("a connection failed", exc_info=True)


class _Server(_Serving, socketserver.UnixStreamServer):
    """The socket's server; `ctx` is None while the daemon warms up."""

    def __init__(self, path: str, state: DaemonState, ctx: Context | None) -> None:
        self.state, self.ctx = state, ctx
        super().__init__(path, _Handler)


class _TcpServer(_Serving, socketserver.TCPServer):
    allow_reuse_address = True

    def __init__(self, port: int, state: DaemonState, ctx: Context, token: str) -> None:
        self.state, self.ctx, self.token = state, ctx, token
        super().__init__((tcp.HOST, port), _TcpHandler)


def _bind(where: Path, state: DaemonState) -> _Server:
    where.unlink(missing_ok=True)  # left by a daemon that died: the lock is ours now
    umask = os.umask(0o177)  # the socket is never open to others, not even for a moment
    try:
        server = _Server(str(where), state, None)
    finally:
        os.umask(umask)
    os.chmod(where, 0o600)
    return server


def _mend(ctx: Context, stop: _Stop) -> None:
    """After a crash the store may be damaged: SQLite's quick check finds it (and stops
    writes into it). And the vector index may lack the rows committed just before the crash
    (SQLite commits first), however many: they are embedded while the daemon serves, a
    batch at a time under the engine lock, so requests are answered in between. A daemon
    stopping first leaves the rest to the next one; `doctor` reports the gap meanwhile.
    A model whose index lacks rows (a crash's few, or all of them when the embedder was
    switched) is left out of search until it has them all (`engine.catching_up`, which
    status shows), so search is lexical meanwhile rather than blind to what is missing."""
    from mnemoweave.store import damage
    from mnemoweave.upkeep.indexing import repair_steps

    try:
        found = damage.check(ctx.engine.db_path)  # no engine lock: requests go on
        if found != "ok":
            log.error("the store is damaged (%s): writes are stopped", found)
            return
        catching_up = ctx.engine.catching_up

        def progress(model: str, done: int, total: int) -> None:
            if done < total:
                catching_up[model] = {"done": done, "total": total}
            else:
                catching_up.pop(model, None)

        steps = repair_steps(ctx.engine, progress=progress, remote=False)  # remote_work's
        while not stop.reason:
            with ctx.lock:
                line = next(steps, None)
            if line is None:
                return
            if line:
                log.info("%s", line)
            time.sleep(MEND_PAUSE)  # a lock just released is not fair: let waiters in
    except Exception:
        log.exception("mending the vector index failed")


class _Listeners:
    """The daemon's servers, each on its own accept thread: the socket's from the start,
    the loopback one at start (daemon_port) or when the web page first asks for it."""

    def __init__(self, home: Path, state: DaemonState) -> None:
        self.home, self.state = home, state
        self.ctx: Context | None = None  # set once the engine is warm
        self.servers: list[_Server | _TcpServer] = []
        self.threads: list[threading.Thread] = []
        self._lock = threading.Lock()
        self._closing = False

    def start(self, server: _Server | _TcpServer) -> None:
        thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": TICK}, name="accept"
        )
        self.servers.append(server)
        self.threads.append(thread)
        thread.start()

    def tcp(self, port: int) -> str:
        """The loopback listener's address, opened on `port` (0: a free one) if none is
        open; OSError when the port cannot be had."""
        with self._lock:
            if self._closing:
                raise OSError("the daemon is stopping")
            if self.state.tcp:
                return self.state.tcp
            if self.ctx is None:
                raise OSError("the daemon is warming up")
            server = _TcpServer(port, self.state, self.ctx, tcp.token(self.home))
            self.state.tcp, self.state.tcp_error = f"{tcp.HOST}:{server.server_address[1]}", ""
            log.info("serving http://%s (token in %s)", self.state.tcp, tcp.TOKEN_NAME)
            self.start(server)
            return self.state.tcp

    def close(self, where: Path) -> None:
        """Stop serving (once; a second call does nothing)."""
        with self._lock:
            if self._closing:
                return
            self._closing = True
        for server in self.servers:
            server.shutdown()  # stop accepting
        where.unlink(missing_ok=True)
        for server in self.servers:
            server.server_close()  # waits for the requests in flight
        for thread in self.threads:
            thread.join()


PROXY_LOG = "logs/proxy.out"  # what the proxy the daemon runs prints


def _start_proxy(home: Path, config: Any) -> subprocess.Popen[bytes] | None:
    """The memory proxy (`mnemoweave proxy`), run while the daemon serves when
    `proxy_upstream` is set; None when it is not (or could not start: logged)."""
    if not config.proxy_upstream:
        return None
    out = home / PROXY_LOG
    out.parent.mkdir(parents=True, exist_ok=True)
    try:
        with open(out, "ab") as printed:
            child = subprocess.Popen(
                [sys.executable, "-m", "mnemoweave", "proxy"],
                stdin=subprocess.DEVNULL,
                stdout=printed,
                stderr=subprocess.STDOUT,
                env=os.environ | {"MNEMOWEAVE_HOME": str(home)},
            )
    except OSError as exc:
        log.error("the proxy did not start: %s", exc)
        return None
    log.info("running the proxy to %s (pid %d)", config.proxy_upstream, child.pid)
    return child


def _stop_proxy(child: subprocess.Popen[bytes] | None) -> None:
    if child is None or child.poll() is not None:
        return
    child.terminate()  # it distills what is pending, then exits
    try:
        child.wait(PROXY_STOP)
    except subprocess.TimeoutExpired:
        child.kill()
        child.wait()


def _log_to(home: Path) -> logging.Handler:
    path = home / LOG_NAME
    path.parent.mkdir(parents=True, exist_ok=True)
    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(process)d %(levelname)s %(message)s"))
    root = logging.getLogger("mnemoweave")
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    return handler


def _take(lock: StoreLock, home: Path) -> None:
    holder = lock_holder(home)
    if holder is not None and holder[1] == DAEMON_ROLE:
        raise DaemonError(
            f"a daemon already serves {home} (pid {holder[0]}); `mnemoweave stop` stops it"
        )
    if not lock.acquire(DAEMON_ROLE, wait=LOCK_WAIT):
        raise DaemonError(f"the store is busy: {holder_text(home)} holds {lock.path}")


class _Stop:
    """Set from a signal handler: a plain attribute, since a lock taken there could deadlock."""

    reason = ""

    def __call__(self, signum: int, frame: Any) -> None:
        self.reason = signal.Signals(signum).name


def serve(home: Path, echo: Callable[[str], None] = print) -> None:
    """Run the daemon for `home` until SIGTERM/SIGINT or the idle timeout."""
    stop = _Stop()
    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        make_dir(home)
        where = Path(socket_path(home))
        if len(os.fsencode(where)) > SOCKET_PATH_MAX:
            raise DaemonError(
                f"the socket path {where} is too long for a Unix socket "
                f"(at most {SOCKET_PATH_MAX} bytes): use a shorter MNEMOWEAVE_HOME"
            )
        config = load_config(home)
        lock = StoreLock(home)
        _take(lock, home)
        log_handler = _log_to(home)
        try:
            write_pid(home)
            _run(home, config, where, stop, echo, lock.fd)
        except BaseException:
            log.exception("the daemon failed")
            raise
        finally:
            remove_pid(home)
            lock.release()
            logging.getLogger("mnemoweave").removeHandler(log_handler)
            log_handler.close()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _run(
    home: Path, config: Any, where: Path, stop: _Stop, echo: Callable[[str], None], lock: int
) -> None:
    state = DaemonState(home, config.daemon_idle_minutes)
    listeners = _Listeners(home, state)
    warming.prepare()
    socket_server = _bind(where, state)
    taker = warming.Taker(home, socket_server, close=(lock,))  # takes hooks while this warms up
    try:
        _serve_warm(home, config, where, stop, echo, listeners, socket_server, taker)
    finally:
        taker.stop()
        listeners.close(where)
        if socket_server not in listeners.servers:  # stopped before it served
            socket_server.server_close()


def _serve_warm(
    home: Path,
    config: Any,
    where: Path,
    stop: _Stop,
    echo: Callable[[str], None],
    listeners: _Listeners,
    socket_server: _Server,
    taker: warming.Taker,
) -> None:
    from mnemoweave.embed import onnx_embedder
    from mnemoweave.engine import Engine

    began, state = time.monotonic(), listeners.state
    onnx_embedder.THREADS = 1  # see there: the daemon serves one prompt at a time
    engine = Engine(home, config)
    ctx = Context(engine, state.snapshot)
    try:
        warming.warm(engine)
        warming.warmed(home, time.monotonic() - began)
        log.info("warm in %.2fs: %s", time.monotonic() - began, engine.retrieval_mode())
        if stop.reason:
            return
        from mnemoweave.daemon import hooks

        taker.stop()  # what it spooled is replayed now
        host_side = hooks.start(ctx)  # replays the spool, follows transcripts
        listeners.ctx = ctx
        ctx.web = web.Web(
            lambda port: listeners.tcp(port or config.daemon_port), lambda: tcp.token(home)
        )
        if config.daemon_port:  # listening (token made) before the socket answers anyone
            try:  # without it the socket serves on (hooks must keep working): status tells
                listeners.tcp(config.daemon_port)
            except OSError as exc:
                state.tcp_error = f"{tcp.HOST}:{config.daemon_port}: {exc.strerror or exc}"
                log.error("no TCP listener: %s", state.tcp_error)
        socket_server.ctx = ctx  # warm: the socket serves the whole API from now on
        listeners.start(socket_server)
        mending = threading.Thread(target=_mend, args=(ctx, stop), name="mend")
        mending.start()
        remote, remote_stop = remote_work.start(ctx)  # remote models, off the lock
        proxy = _start_proxy(home, config)
        team_sync = team.start(ctx, config)  # pulls and pushes off every request's path
        try:
            log.info("serving %s (pid %d)", where, os.getpid())
            echo(f"serving {where} (pid {os.getpid()})")
            if state.tcp:
                echo(f"serving http://{state.tcp} (bearer token in {tcp.token_path(home)})")
            idle_limit = config.daemon_idle_minutes * 60
            idle_work = IdleWork(ctx, config.consolidate_idle)
            while not stop.reason:
                time.sleep(TICK)
                quiet = state.idle_seconds()
                if idle_limit > 0 and quiet >= idle_limit:
                    stop.reason = f"idle for {config.daemon_idle_minutes:g} minutes"
                idle_work.tick(quiet)
            log.info("%s: stopping", stop.reason)
        finally:
            if team_sync is not None:
                team_sync.stop()
            _stop_proxy(proxy)
            listeners.close(where)  # before the host side stops: in-flight hooks finish
            mending.join()
            remote_stop.set()
            remote.join()
            host_side.stop()
        log.info("stopped after %d requests", state.total)
    finally:
        with ctx.lock:
            engine.close()
