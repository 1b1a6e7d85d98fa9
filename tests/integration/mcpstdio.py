"""Talking to `python -m mnemoweave mcp` with the MCP SDK's own stdio client, bounded in time."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from mnemoweave.hosts import client

SESSION_WITHIN = 120.0  # seconds for one whole client session (start, calls, shutdown)
COMMAND = [sys.executable, "-m", "mnemoweave", "mcp"]


def server_env(home: Path) -> dict[str, str]:
    """The server's environment: this data dir, the test's models cache (../../conftest.py),
    and a HOME inside the test's tmp dir."""
    models, user = os.environ["MNEMOWEAVE_MODELS"], str(home.parent / "home")
    return {"MNEMOWEAVE_HOME": str(home), "MNEMOWEAVE_MODELS": models, "HOME": user}


@asynccontextmanager
async def session(
    home: Path,
    *,
    cwd: Path | None = None,
    args: tuple[str, ...] = (),
    command: list[str] | None = None,
    env: dict[str, str] | None = None,
) -> AsyncIterator[ClientSession]:
    """A client session with a server started as `command` (default `python -m mnemoweave
    mcp`) plus `args`, `env` added to its environment."""
    (home.parent / "home").mkdir(parents=True, exist_ok=True)
    argv = [*(command or COMMAND), *args]
    params = StdioServerParameters(
        command=argv[0],
        args=argv[1:],
        env=server_env(home) | (env or {}),
        cwd=str(cwd or home.parent),
    )
    with open(home.parent / "mcp-server.stderr", "a", encoding="utf-8") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write) as client_session,
        ):
            await client_session.initialize()
            yield client_session


def run(
    home: Path,
    body: Callable[[ClientSession], Awaitable[Any]],
    *,
    cwd: Path | None = None,
    args: tuple[str, ...] = (),
    command: list[str] | None = None,
    env: dict[str, str] | None = None,
) -> Any:
    """Run `body(session)` against a fresh server, all of it within SESSION_WITHIN seconds."""

    async def main() -> Any:
        with anyio.fail_after(SESSION_WITHIN):
            given = session(home, cwd=cwd, args=args, command=command, env=env)
            async with given as client_session:
                return await body(client_session)

    return anyio.run(main)


async def call(client_session: ClientSession, tool: str, **arguments: Any) -> tuple[bool, str]:
    """(is_error, text) of one tool call."""
    result = await client_session.call_tool(tool, arguments)
    return bool(result.is_error), "\n".join(c.text for c in result.content if c.type == "text")


def listing_chars(tools: list[Any]) -> int:
    """Size of the tools/list answer as a host receives it (JSON, without empty fields)."""
    dumped = [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in tools]
    return len(json.dumps(dumped, ensure_ascii=False))


class Daemon:
    """A `mnemoweave serve` started for a test; `stop()` always ends it."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.log = open(home.parent / "daemon.out", "ab")  # noqa: SIM115 (closed in stop)
        env = {k: v for k, v in os.environ.items() if not k.startswith("MNEMOWEAVE_")}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "mnemoweave", "serve"],
            env=env | server_env(home),
            stdin=subprocess.DEVNULL,
            stdout=self.log,
            stderr=self.log,
            start_new_session=True,
        )
        deadline = time.monotonic() + 60
        while not client.running(home):
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise AssertionError((home.parent / "daemon.out").read_text())
            time.sleep(0.05)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        self.log.close()
