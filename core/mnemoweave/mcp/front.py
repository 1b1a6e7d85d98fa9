"""`mnemoweave mcp`, up at once: the MCP server's front.

A host waits for its MCP servers before its first request, and the MCP SDK, pydantic and
the engine take about a second to import. The front answers what a host asks at start,
`initialize` and the listings (tools, prompts, resources, ping), from `listing.json`,
with the standard library only. At the first message it does not answer itself (a tool
call, most often) it hands the connection to the full server (mcp/server.py), replaying
the handshake to it first, so from then on the SDK's server answers everything.

`listing.json` holds the full server's own answers; a test keeps them equal.
Rewrite it with `python -m mnemoweave.mcp.front`.
"""

from __future__ import annotations

import json
import os
import sys

LISTING = os.path.join(os.path.dirname(os.path.abspath(__file__)), "listing.json")
LISTED = ("tools/list", "prompts/list", "resources/list", "resources/templates/list", "ping")
REPLAYED = "mnemoweave-replayed"  # the id the front gives the initialize it replays

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import IO, Any


def options(args: list[str]) -> tuple[str | None, bool] | None:
    """(--project, --global) of `mnemoweave mcp ARGS`; None when the CLI should read them
    (--help, an unknown option, both scopes given), so it answers as for any command."""
    project, global_scope, rest = None, False, list(args)
    while rest:
        arg = rest.pop(0)
        if arg == "--global":
            global_scope = True
        elif arg in ("--project", "-p") and rest:
            project = rest.pop(0)
        elif arg.startswith("--project="):
            project = arg.partition("=")[2]
        else:
            return None
    return None if project and global_scope else (project, global_scope)


def answer(listing: dict[str, Any], message: dict[str, Any]) -> dict[str, Any] | None:
    """The reply to a request the front answers; None for the rest."""
    method = message.get("method")
    if method == "initialize":
        params = message.get("params")
        asked = params.get("protocolVersion") if isinstance(params, dict) else None
        versions = listing["versions"]
        result = dict(listing["initialize"])
        result["protocolVersion"] = asked if asked in versions else versions[-1]
    elif method in LISTED:
        result = listing[method]
    else:
        return None
    return {"jsonrpc": "2.0", "id": message["id"], "result": result}


def _message(line: bytes) -> dict[str, Any] | None:
    try:
        found = json.loads(line)
    except ValueError:
        return None
    return found if isinstance(found, dict) else None


def serve(project: str | None, global_scope: bool, stdin: IO[bytes], wire: IO[bytes]) -> None:
    """Answer the start of the conversation; hand it over at the first other message."""
    with open(LISTING, encoding="utf-8") as source:
        listing = json.load(source)
    said: list[bytes] = []  # the handshake, replayed to the full server
    while line := stdin.readline():
        if not line.strip():
            continue
        message = _message(line)
        method = message.get("method") if message else None
        if message is not None and "id" in message and (reply := answer(listing, message)):
            wire.write(json.dumps(reply, ensure_ascii=False).encode() + b"\n")
            wire.flush()
            if method == "initialize":
                said.append(json.dumps(message | {"id": REPLAYED}).encode() + b"\n")
        elif message is not None and method == "notifications/initialized":
            said.append(line)
        elif message is not None and "id" not in message and method != "initialize":
            continue  # another notification (a cancelled or progress one): nothing to do
        else:
            return _hand_over(project, global_scope, [*said, line])


def _hand_over(project: str | None, global_scope: bool, said: list[bytes]) -> None:
    from mnemoweave.hook import with_site

    with_site()  # started without site (see the launcher), the SDK needs it now
    from mnemoweave.mcp.server import serve as serve_fully
    from mnemoweave.scope import resolve_scope

    serve_fully(resolve_scope(project, global_scope), said=said, replayed=REPLAYED)


def main(args: list[str]) -> int | None:
    """`mnemoweave mcp ARGS`; None when the CLI should run the command instead."""
    chosen = options(args)
    if chosen is None:
        return None
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)  # hosts send SIGINT first when they stop it
    serve(*chosen, sys.stdin.buffer, sys.stdout.buffer)
    return 0


FULL_SERVER = "from mnemoweave.mcp.server import serve; serve()"
START: dict[str, Any] = {
    "jsonrpc": "2.0",
    "method": "initialize",
    "params": {"capabilities": {}, "clientInfo": {"name": "mnemoweave", "version": "0"}},
}


def asked_fully(messages: list[dict[str, Any]], timeout: float = 120) -> dict[Any, Any]:
    """The full server's replies to `messages` (sent at once, then the input ends), by
    request id; it runs in a process of its own, in this environment."""
    import subprocess

    sent = "".join(json.dumps(m) + "\n" for m in messages)
    done = subprocess.run(
        [sys.executable, "-c", FULL_SERVER],
        input=sent,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=True,
    )
    replies = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    return {reply.get("id"): reply for reply in replies}


def record() -> dict[str, Any]:
    """The full server's answers to the start of a conversation (what `listing.json`
    holds): its initialize result, the protocol versions it negotiates, and each listing."""
    from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

    versions = list(HANDSHAKE_PROTOCOL_VERSIONS)
    start = START | {"id": 0, "params": START["params"] | {"protocolVersion": versions[-1]}}
    asked = [
        start,
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        *({"jsonrpc": "2.0", "id": i, "method": m} for i, m in enumerate(LISTED, 1)),
    ]
    replies = asked_fully(asked)
    initialize = dict(replies[0]["result"])
    del initialize["protocolVersion"]
    listed = {method: replies[i]["result"] for i, method in enumerate(LISTED, 1)}
    return {"versions": versions, "initialize": initialize, **listed}


def render() -> str:
    return json.dumps(record(), ensure_ascii=False, indent=1, sort_keys=True) + "\n"


if __name__ == "__main__":
    text = render()
    with open(LISTING, "w", encoding="utf-8") as out:
        out.write(text)
