"""The MCP server's stdio transport: the MCP SDK's, except that every request read before
the input ended gets its answer (a batch piped in ends with EOF right after its last
request), and that stray output of the server's own code goes to stderr, not the wire."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from io import TextIOWrapper
from typing import Any

import anyio
from mcp.server.stdio import stdio_server

DRAIN_WITHIN = 600.0  # seconds the answers to the last requests may take once input ended


class Exchange:
    """The requests read and not yet answered. At the end of the input the server waits
    until each is answered (at most DRAIN_WITHIN seconds), so a batch piped in gets every
    reply, the last one too."""

    def __init__(self) -> None:
        self.open: set[str] = set()

    @staticmethod
    def _id(line: str, request: bool) -> str | None:
        try:
            message = json.loads(line)
        except ValueError:
            return None
        if not isinstance(message, dict) or "id" not in message:
            return None
        return json.dumps(message["id"]) if ("method" in message) == request else None

    def asked(self, line: str) -> None:
        if (key := self._id(line, request=True)) is not None:
            self.open.add(key)

    def answered(self, line: str) -> None:
        if (key := self._id(line, request=False)) is not None:
            self.open.discard(key)

    async def lines(self, source: Any, said: Sequence[str] = ()) -> Any:
        """`said`, then the lines of `source`; at its end, once what they asked is answered."""
        for line in said:
            self.asked(line)
            yield line
        async for line in source:
            self.asked(line)
            yield line
        with anyio.move_on_after(DRAIN_WITHIN):
            while self.open:
                await anyio.sleep(0.01)


class _Output:
    """The wire, seen by the exchange; the reply to `replayed` (an id) is not sent."""

    def __init__(self, target: Any, exchange: Exchange, replayed: str) -> None:
        self.target, self.exchange = target, exchange
        self.replayed = json.dumps(replayed) if replayed else None
        self.written: list[str] = []

    async def write(self, text: str) -> None:
        if self.replayed is None or Exchange._id(text, request=False) != self.replayed:
            await self.target.write(text)
        self.written.append(text)

    async def flush(self) -> None:
        await self.target.flush()
        for text in self.written:
            self.exchange.answered(text)
        self.written.clear()


async def serve_stdio(server: Any, said: Sequence[bytes] = (), replayed: str = "") -> None:
    """Run the SDK's low-level `server` on stdin and stdout until the input ends and every
    request read is answered: first the lines `said` (read before, by the front), with no
    reply sent to the request whose id is `replayed`."""
    wire = os.fdopen(os.dup(sys.stdout.fileno()), "wb")  # the protocol's own stdout
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # stray prints miss the wire
    exchange = Exchange()
    given = TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="replace")
    earlier = [line.decode("utf-8", "replace") for line in said]
    stdin = exchange.lines(anyio.wrap_file(given), earlier)
    stdout = _Output(anyio.wrap_file(TextIOWrapper(wire, encoding="utf-8")), exchange, replayed)
    # The SDK annotates `stdout` as anyio.AsyncFile[str] but only awaits its write() and
    # flush(), which _Output provides (it wraps one to see each answer go out).
    async with stdio_server(stdin, stdout) as (read_stream, write_stream):  # type: ignore[arg-type]
        await server.run(read_stream, write_stream, server.create_initialization_options())
