"""`mnemoweave team serve`: the team's server, one process in front of Chroma.

Every request carries a member's token (`Authorization: Bearer TOKEN`); the token, then
the body's declared length (at most MAX_BODY), are checked before a byte of the body is
read, and a refused request closes its connection. The token names the member and its
team (members.py); the request names neither, so a member reads and writes only its own
team's records, and the server stamps their authors (records.py).

Chroma runs inside this process (the `chromadb` package's engine on `--path`), so there
is no second port: the only way to the data is this one, or the directory itself, which
is its owner's only. Past one server, `--chroma URL` points several of these at one Chroma
server or distributed deployment on a network only they reach (see docs/team.md).

The API (JSON; `records` are shared memories, `vector` their embedding):
    GET  /v1/team                               the member, its team, the team's model
    POST /v1/team/join      {model, dim}         the team's collection, for this model
    POST /v1/team/publish   {model, records}     write memories; their content ids
    POST /v1/team/retract   {model, cids}        take the member off these records
    GET  /v1/team/changes?since=T&limit=N&offset=K   records updated after T
"""

from __future__ import annotations

import json
import logging
import re
import signal
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from mnemoweave.errors import InvalidInput, MnemoweaveError
from mnemoweave.team.members import Member, Members
from mnemoweave.team.records import MAX_IDS, MAX_PAGE, MAX_RECORDS, ModelClash, Records

log = logging.getLogger("mnemoweave.team")
POSTS = ("/v1/team/join", "/v1/team/publish", "/v1/team/retract")
MAX_BODY = 16 << 20  # bytes: a publish carries at most MAX_RECORDS records (about 2 MB)


def bearer(headers: Any) -> str:
    given = headers.get("Authorization") or ""
    return given[len("Bearer ") :].strip() if given.startswith("Bearer ") else ""


class _Handler(BaseHTTPRequestHandler):
    server: TeamHTTPServer
    protocol_version = "HTTP/1.1"
    timeout = 30

    def _serve(self) -> None:
        member = self.server.members.who(bearer(self.headers))
        if member is None:
            self._refuse(401, "unknown or revoked token")
            return
        given = self.headers.get("Content-Length")
        if self.headers.get("Transfer-Encoding"):
            self._refuse(411, "send the body with a Content-Length")
            return
        if given is not None and not re.fullmatch(r"[0-9]{1,12}", given.strip()):
            self._refuse(400, "Content-Length is not a length")
            return
        size = int(given or 0)
        if size > MAX_BODY:
            self._refuse(413, f"the body is over {MAX_BODY} bytes")
            return
        body = self.rfile.read(size) if size else b""
        try:
            self._reply(200, self._route(member, body))
        except InvalidInput as exc:
            self._reply(400, {"error": str(exc)})
        except ModelClash as exc:
            self._reply(409, {"error": str(exc)})
        except _NotFound:
            path = urlsplit(self.path).path[:200]
            self._reply(404, {"error": f"no such call: {self.command} {path}"})
        except Exception as exc:  # one failed request, never the server
            log.exception("team server: %s %s failed", self.command, self.path)
            self._reply(500, {"error": f"{type(exc).__name__}: the server logged it"})

    def _route(self, member: Member, body: bytes) -> dict[str, Any]:
        url = urlsplit(self.path)
        records, team = self.server.records, member.team
        who = {"team": team, "member": member.name}
        if (self.command, url.path) == ("GET", "/v1/team"):
            return who | records.info(team)
        if (self.command, url.path) == ("GET", "/v1/team/changes"):
            query = {k: v[-1] for k, v in parse_qs(url.query).items()}
            since = _number(query.get("since", "0"), "since", float)
            limit = _number(query.get("limit", str(MAX_PAGE)), "limit", int)
            offset = _number(query.get("offset", "0"), "offset", int)
            if not 0 < limit <= MAX_PAGE or offset < 0:
                raise InvalidInput(f"limit must be 1-{MAX_PAGE} and offset 0 or more")
            return {"records": records.changes(team, since, limit, offset)}
        if self.command != "POST" or url.path not in POSTS:
            raise _NotFound
        given = _json(body)
        model = given.get("model")
        if not isinstance(model, str) or not model:
            raise InvalidInput("'model' must name the embedding model")
        if url.path == "/v1/team/join":
            dim = given.get("dim")
            if not isinstance(dim, int) or isinstance(dim, bool) or not 0 < dim <= 8192:
                raise InvalidInput("'dim' must be the model's dimension")
            return who | records.join(team, model, dim)
        if url.path == "/v1/team/publish":
            batch = _list(given, "records", MAX_RECORDS)
            return {"records": records.publish(team, member.name, model, batch)}
        cids = _list(given, "cids", MAX_IDS)
        if not all(isinstance(c, str) and re.fullmatch(r"[0-9a-f]{32}", c) for c in cids):
            raise InvalidInput("'cids' must be content ids")
        return {"retracted": records.retract(team, member.name, model, cids)}

    def _refuse(self, status: int, error: str) -> None:
        log.info("team server: %s %s refused: %s", self.command, self.path[:80], error)
        self.close_connection = True
        self._reply(status, {"error": error}, close=True)

    def _reply(self, status: int, answer: dict[str, Any], close: bool = False) -> None:
        data = json.dumps(answer, ensure_ascii=False).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        if close:
            self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _serve

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("team server: " + format, *args)


class _NotFound(Exception):
    pass


def _json(body: bytes) -> dict[str, Any]:
    try:
        given = json.loads(body or b"{}")
    except (ValueError, UnicodeDecodeError) as exc:
        raise InvalidInput(f"the body is not JSON: {exc}") from None
    if not isinstance(given, dict):
        raise InvalidInput("the body must be a JSON object")
    return given


def _list(given: dict[str, Any], name: str, most: int) -> list[Any]:
    found = given.get(name)
    if not isinstance(found, list) or len(found) > most:
        raise InvalidInput(f"'{name}' must be a list of at most {most}")
    return found


def _number(text: str, name: str, kind: Callable[[str], Any]) -> Any:
    try:
        value = kind(text)
    except ValueError:
        raise InvalidInput(f"{name} must be a number") from None
    if value != value:  # NaN
        raise InvalidInput(f"{name} must be a number")
    return value


class TeamHTTPServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, host: str, port: int, members: Members, records: Records) -> None:
        super().__init__((host, port), _Handler)
        self.members, self.records = members, records


def chroma_client(path: Path, chroma_url: str = "") -> Any:
    """Chroma in this process on `path`/chroma, or the Chroma server at `chroma_url`."""
    import chromadb
    from chromadb.config import Settings

    settings = Settings(anonymized_telemetry=False)
    if not chroma_url:
        return chromadb.PersistentClient(str(path / "chroma"), settings=settings)
    parts = urlsplit(chroma_url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"--chroma {chroma_url!r}: use http(s)://HOST[:PORT]")
    tls = parts.scheme == "https"
    return chromadb.HttpClient(
        parts.hostname, parts.port or (443 if tls else 80), tls, settings=settings
    )


def serve(path: Path, host: str, port: int, chroma_url: str = "", echo: Any = print) -> None:
    """Serve the team on host:port until SIGTERM or SIGINT (members: `team member add`)."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    path.chmod(0o700)
    members = Members(path)
    try:
        records = Records(chroma_client(path, chroma_url))
    except (ValueError, OSError, RuntimeError) as exc:
        raise MnemoweaveError(f"Chroma could not be opened: {exc}") from None
    http = TeamHTTPServer(host, port, members, records)
    stopping = threading.Event()
    previous = {
        s: signal.signal(s, lambda *_: stopping.set()) for s in (signal.SIGTERM, signal.SIGINT)
    }
    thread = threading.Thread(target=http.serve_forever, name="team-server", daemon=True)
    thread.start()
    try:
        echo(f"team server: http://{host}:{http.server_address[1]} (data in {path})")
        if not len(members):
            add = f"mnemoweave team member add NAME --team TEAM --path {path}"
            echo(f"no members yet: add one with `{add}`")
        while not stopping.wait(0.5):
            pass
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        http.shutdown()
        http.server_close()
