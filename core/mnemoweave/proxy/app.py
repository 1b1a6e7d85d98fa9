"""The proxy's ASGI app (Starlette, served by uvicorn on 127.0.0.1) and its forwarding to
the upstream (httpx).

`POST /v1/chat/completions` (OpenAI) and `POST /v1/messages` (Anthropic) get memory: the
woven context goes into the body the way the API expects (openai.py, anthropic.py), and
the exchange is stored once the response is out (memory.py). Every other request, and a
chat request memory cannot read, is forwarded as it came: method, path, query, body, and
headers but the hop-by-hop ones. A request reaches the upstream at the upstream URL plus
its path, a leading `/v1` dropped (the upstream URL is the API root with its version, as
an SDK's base URL is). Responses come back as they arrive, status and headers unchanged;
a client that goes away closes the upstream request. Credentials (`Authorization`,
`x-api-key`) are forwarded and never logged; the proxy's own token, when it has one, is
the `X-Mnemoweave-Token` header, which is not forwarded. A path with a "." or ".."
segment is refused (400): nothing reaches above the upstream URL.
"""

from __future__ import annotations

import hmac
import json
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from types import ModuleType
from typing import Any
from urllib.parse import unquote

import anyio
import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from mnemoweave.proxy import anthropic, openai
from mnemoweave.proxy.memory import Memory
from mnemoweave.proxy.sse import Events
from mnemoweave.proxy.turns import Conversation, Reply

log = logging.getLogger("mnemoweave.proxy")

HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "trailer",
        "trailers",
        "transfer-encoding",
        "upgrade",
    }
)
OURS = "x-mnemoweave-"  # the proxy's own headers: never forwarded
TOKEN_HEADER = "x-mnemoweave-token"
APIS: dict[str, ModuleType] = {path: api for api in (openai, anthropic) for path in api.PATHS}
METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"]
TIMEOUT = httpx.Timeout(connect=10.0, read=600.0, write=60.0, pool=10.0)


@dataclass(frozen=True)
class Settings:
    upstream: str  # the API root, such as https://api.openai.com/v1
    token: str  # the proxy's own token ("" for none)
    memory: Memory


def subpath(path: str) -> str:
    """The path under the upstream URL: the request's, a leading /v1 dropped."""
    return path[3:] if path == "/v1" or path.startswith("/v1/") else path


def forwarded(headers: list[tuple[bytes, bytes]], *drop: str) -> list[tuple[bytes, bytes]]:
    """Headers minus the hop-by-hop ones, ours and `drop` (lower-case names)."""
    dropped = HOP_BY_HOP | set(drop)
    return [
        (name, value)
        for name, value in headers
        if name.decode("latin-1").lower() not in dropped
        and not name.decode("latin-1").lower().startswith(OURS)
    ]


def raw_path(request: Request) -> str:
    """The request's path as the client sent it (percent-encoding kept)."""
    return request.scope.get("raw_path", b"").decode("latin-1") or request.url.path


def climbs(path: str) -> bool:
    """Whether a request path has a "." or ".." segment (percent-encoded too): such a path
    could reach above the upstream's root once an HTTP client resolves it."""
    return any(segment in (".", "..") for segment in unquote(path).split("/"))


def create_app(settings: Settings) -> Starlette:
    """The proxy for `settings`; its httpx client lives as long as the app runs."""
    http = httpx.AsyncClient(timeout=TIMEOUT, follow_redirects=False, trust_env=False)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        try:
            yield
        finally:
            await http.aclose()
            await anyio.to_thread.run_sync(settings.memory.close)

    async def handle(request: Request) -> Response:
        if settings.token and not hmac.compare_digest(
            request.headers.get(TOKEN_HEADER, "").encode(), settings.token.encode()
        ):
            return JSONResponse(
                {
                    "error": {
                        "message": "mnemoweave proxy: wrong or no X-Mnemoweave-Token",
                        "type": "proxy_auth",
                    }
                },
                401,
            )
        if climbs(raw_path(request)):
            message = "mnemoweave proxy: a path with . or .. segments is refused"
            return JSONResponse({"error": {"message": message, "type": "proxy_path"}}, 400)
        api = APIS.get(subpath(request.url.path)) if request.method == "POST" else None
        if api is None:
            return await forward(request, request.stream())
        return await converse(request, api)

    async def converse(request: Request, api: ModuleType) -> Response:
        """A chat request: memory in, the exchange stored after the response."""
        raw = await request.body()
        try:
            body = json.loads(raw)
            if not isinstance(body, dict):
                raise ValueError("not a JSON object")
        except (ValueError, RecursionError) as exc:
            log.warning(
                "POST %s: the body is not a JSON object (%s); sent upstream unchanged",
                request.url.path,
                type(exc).__name__,
            )
            return await forward(request, raw)
        talk: Conversation | None = api.conversation(body)
        if talk is None:
            return await forward(request, raw)
        memory = settings.memory
        try:
            session, project, context = await anyio.to_thread.run_sync(
                memory.before, dict(request.headers), talk
            )
        except Exception:  # memory never stands in the way: the request goes as it came
            log.exception("POST %s: memory failed; sent upstream unchanged", request.url.path)
            return await forward(request, raw)
        content = raw
        if context:
            content = json.dumps(api.with_context(body, context), ensure_ascii=False).encode()

        def stored(reply: Reply | None) -> None:
            memory.store(session, project, talk, reply)

        return await forward(request, content, (api, stored))

    async def forward(
        request: Request,
        content: Any,
        capture: tuple[ModuleType, Callable[[Reply | None], None]] | None = None,
    ) -> Response:
        """Send the request upstream; its response back as it arrives. With `capture`,
        a 2xx response is read as the API's reply (decoded), given to the callback at the
        end (None when the response did not arrive whole)."""
        query = request.url.query
        url = settings.upstream.rstrip("/") + subpath(raw_path(request))
        url += f"?{query}" if query else ""
        headers = forwarded(request.headers.raw, "host", "content-length")
        outgoing = http.build_request(request.method, url, headers=headers, content=content)
        try:
            upstream = await http.send(outgoing, stream=True)
        except httpx.HTTPError as exc:
            log.error(
                "%s %s: the upstream did not answer (%s)",
                request.method,
                request.url.path,
                type(exc).__name__,
            )
            message = f"mnemoweave proxy: the upstream did not answer ({type(exc).__name__})"
            return JSONResponse({"error": {"message": message, "type": "proxy_upstream"}}, 502)
        reading = capture if capture and upstream.is_success else None
        drop = ("content-length", "content-encoding") if reading else ()
        response = StreamingResponse(relay(upstream, reading), status_code=upstream.status_code)
        response.raw_headers = forwarded(upstream.headers.raw, *drop)
        return response

    return Starlette(routes=[Route("/{path:path}", handle, methods=METHODS)], lifespan=lifespan)


async def relay(
    upstream: httpx.Response,
    capture: tuple[ModuleType, Callable[[Reply | None], None]] | None,
) -> AsyncIterator[bytes]:
    """The upstream's body, chunk by chunk (raw, or decoded when it is read); the upstream
    request is closed however this ends (a client gone away cancels it). A reply is whole
    when the body was read to its end, or its stream said it was done (a client may close
    the connection on the stream's last event, before the upstream closes it)."""
    complete = False
    streamed = upstream.headers.get("content-type", "").startswith("text/event-stream")
    events, chunks = Events(), bytearray()
    stream = capture[0].Stream() if capture else None
    try:
        async for chunk in upstream.aiter_bytes() if capture else upstream.aiter_raw():
            if stream is not None and streamed:
                for event, data in events.feed(chunk):
                    stream.add(event, data)
            elif stream is not None:
                chunks += chunk
            yield chunk
        complete = True
    finally:
        with anyio.CancelScope(shield=True):
            await upstream.aclose()
            if capture is not None and stream is not None:
                whole = complete or (streamed and stream.done)
                capture[1](_reply(capture[0], stream, chunks, streamed) if whole else None)


def _reply(api: ModuleType, stream: Any, chunks: bytearray, streamed: bool) -> Reply | None:
    try:
        reply: Reply = stream.reply() if streamed else api.reply_of(json.loads(chunks))
    except (ValueError, RecursionError):
        return None
    return reply


def serve(settings: Settings, port: int, echo: Callable[[str], None]) -> None:
    """Serve on 127.0.0.1:`port` (0: a free port) until SIGINT or SIGTERM; the first line
    echoed names the address."""
    import socket

    import uvicorn

    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", port))
    listener.listen(2048)  # connections wait in the backlog until uvicorn serves them
    config = uvicorn.Config(
        create_app(settings), log_level="warning", access_log=False, lifespan="on"
    )
    echo(f"mnemoweave proxy on http://127.0.0.1:{listener.getsockname()[1]} -> {settings.upstream}")
    uvicorn.Server(config).run(sockets=[listener])
