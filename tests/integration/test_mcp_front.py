"""`mnemoweave mcp` answers the start of a conversation from its front (mcp_front.py) and
hands the rest to the full server: a host sees the same replies either way."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from mnemoweave.mcp import front as mcp_front

WITHIN = 120  # seconds for one server process to answer a scripted conversation


def _start(version: str, id: Any = 0) -> dict[str, Any]:
    params = mcp_front.START["params"] | {"protocolVersion": version}
    return mcp_front.START | {"id": id, "params": params}


INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
LISTINGS = [{"jsonrpc": "2.0", "id": i, "method": m} for i, m in enumerate(mcp_front.LISTED, 1)]


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    (tmp_path / "home").mkdir()
    return os.environ | {"MNEMOWEAVE_HOME": str(tmp_path / "data"), "HOME": str(tmp_path / "home")}


def replies(argv: list[str], sent: list[Any], env: dict[str, str], cwd: Path) -> list[Any]:
    """The replies of a server started as `argv` to the lines `sent` (a dict is sent as
    JSON, a string as it is), in the order they came."""
    lines = "".join((m if isinstance(m, str) else json.dumps(m)) + "\n" for m in sent)
    done = subprocess.run(
        argv, input=lines, capture_output=True, text=True, env=env, cwd=cwd, timeout=WITHIN
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return [json.loads(line) for line in done.stdout.splitlines() if line.strip()]


def replies_in_turn(argv: list[str], sent: list[Any], env: dict[str, str], cwd: Path) -> list[Any]:
    """As `replies`, but each request is sent only once the one before it has its reply, as
    a host waits for a tool's result before it calls the next: a server may run requests
    that arrive together concurrently, so a search sent with a remember could run first."""
    errors = cwd / f"{Path(argv[-1]).name}.stderr"
    with errors.open("w") as stderr:
        server = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
            env=env,
            cwd=cwd,
        )
    assert server.stdin and server.stdout
    out, came = server.stdout, queue.Queue[Any]()

    def read() -> None:
        for line in out:
            if line.strip():
                came.put(json.loads(line))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    found: list[Any] = []
    try:
        for message in sent:
            line = message if isinstance(message, str) else json.dumps(message)
            server.stdin.write(line + "\n")
            server.stdin.flush()
            awaited = (
                message.get("id") if isinstance(message, dict) and "method" in message else None
            )
            while awaited is not None and awaited not in [reply.get("id") for reply in found]:
                found.append(came.get(timeout=WITHIN))
        server.stdin.close()
        assert server.wait(timeout=WITHIN) == 0, errors.read_text()[-2000:]
        reader.join(timeout=WITHIN)
    finally:
        server.kill()
    while not came.empty():
        found.append(came.get())
    return found


def by_id(found: list[Any]) -> dict[str, Any]:
    return {json.dumps(reply.get("id")): reply for reply in found}


FRONT = [sys.executable, "-m", "mnemoweave", "mcp"]
FULL = [sys.executable, "-c", mcp_front.FULL_SERVER]


def test_the_published_listing_is_the_full_servers():
    assert Path(mcp_front.LISTING).read_text(encoding="utf-8") == mcp_front.render(), (
        "core/mnemoweave/mcp/listing.json is stale: run .venv/bin/python -m mnemoweave.mcp.front"
    )


VERSIONS = json.loads(Path(mcp_front.LISTING).read_text(encoding="utf-8"))["versions"]


@pytest.mark.parametrize("version", [*VERSIONS, "1999-01-01", "2026-07-28"])
def test_the_front_answers_the_start_as_the_full_server_does(version, env, tmp_path):
    sent = [_start(version), INITIALIZED, *LISTINGS]
    front = replies(FRONT, sent, env, tmp_path)
    assert front == replies(FULL, sent, env, tmp_path)
    assert [reply["id"] for reply in front] == [0, *range(1, len(LISTINGS) + 1)]


def test_the_rest_of_a_conversation_is_the_full_servers(env, tmp_path):
    """A tool call hands the connection over: the initialize is not answered twice, a
    notification in between is taken, and every later message gets the full server's reply
    (a tool call, an unknown method, a line that is not JSON, the listings again)."""
    call = {"name": "memory_remember", "arguments": {"text": "The staging DB is pg-stage-7"}}
    search = {"name": "memory_search", "arguments": {"query": "staging DB"}}
    sent = [
        _start("2025-06-18", "start"),
        INITIALIZED,
        LISTINGS[0],
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}},
        {"jsonrpc": "2.0", "id": 10, "method": "tools/call", "params": call},
        {"jsonrpc": "2.0", "id": 11, "method": "tools/call", "params": search},
        {"jsonrpc": "2.0", "id": 12, "method": "no/such/method"},
        "this is not JSON",
        *[m | {"id": m["id"] + 20} for m in LISTINGS],
    ]
    env |= {"MNEMOWEAVE_BIN": "/bin/false"}  # no daemon can start: both work in-process
    front = replies_in_turn(FRONT, sent, env, tmp_path)
    other = env | {"MNEMOWEAVE_HOME": str(tmp_path / "other")}
    full = replies_in_turn(FULL, sent, other, tmp_path)
    assert by_id(front) == by_id(full)
    assert len(front) == len(full) and [r.get("id") for r in front].count("start") == 1
    assert "pg-stage-7" in by_id(front)["11"]["result"]["content"][0]["text"]


def test_options_the_front_cannot_read_go_to_the_cli(env, tmp_path):
    assert mcp_front.options(["--project", "app"]) == ("app", False)
    assert mcp_front.options(["--global"]) == (None, True)
    assert mcp_front.options(["--help"]) is None
    helped = subprocess.run(
        [*FRONT, "--help"], capture_output=True, text=True, env=env, timeout=WITHIN
    )
    assert helped.returncode == 0 and "Usage: mnemoweave mcp" in helped.stdout
    both = subprocess.run(
        [*FRONT, "--project", "app", "--global"],
        capture_output=True,
        text=True,
        env=env,
        timeout=WITHIN,
        stdin=subprocess.DEVNULL,
    )
    assert both.returncode != 0 and "not both" in both.stderr
