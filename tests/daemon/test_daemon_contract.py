"""What holds the daemon's parts together without running one: the published OpenAPI file,
the route table against the operations it calls, the wire format, the client's weight."""

from __future__ import annotations

import re
import subprocess
import sys
from datetime import datetime
from typing import Any

import pytest

from mnemoweave.capture.writes import Written
from mnemoweave.daemon import openapi, routes
from mnemoweave.daemon.routes import ROUTES, ApiError, Route, add, find
from mnemoweave.daemon.wire import decode, encode
from mnemoweave.learn.skills import Skill
from mnemoweave.model import (
    MEMORY_KINDS,
    MODES,
    SOURCES,
    VERDICTS,
    Block,
    Card,
    Hit,
    Line,
    Memory,
    SessionEvent,
    Turn,
)
from mnemoweave.recall.weave import Weave


def test_published_openapi_file_is_the_generated_one():
    assert openapi.FILE.read_text(encoding="utf-8") == openapi.render(), (
        "core/mnemoweave/daemon/openapi.json is stale: "
        "run .venv/bin/python -m mnemoweave.daemon.openapi"
    )


def test_every_route_is_in_the_schema_once_with_a_unique_operation_id():
    spec = openapi.spec()
    ops = [op for path in spec["paths"].values() for op in path.values()]
    assert len(ops) == len(ROUTES)
    ids = [op["operationId"] for op in ops]
    assert len(ids) == len(set(ids))
    for route in ROUTES:
        documented = spec["paths"][route.path][route.method.lower()]
        named = {p["name"] for p in documented.get("parameters", [])}
        body = documented.get("requestBody", {}).get("content", {})
        named |= set(body.get("application/json", {}).get("schema", {}).get("properties", {}))
        assert named == set(route.fields), route.path


ADAPTING = {"classify", "review", "teach_skill", "import_records"}  # handlers with own fields


@pytest.mark.parametrize("route", [r for r in ROUTES if r.op], ids=lambda r: r.op)
def test_an_operations_fields_are_read_from_its_signature(route: Route):
    """An operation's fields are declared once, by its signature; only the handlers that
    adapt their arguments (routes.py) list their own, and the team plugin's routes."""
    if route.op in ADAPTING or route.op.startswith("team_"):
        return
    assert (route.fields, route.required) == routes.signature_fields(route.op)


def test_signature_fields_give_each_parameter_its_schema(monkeypatch):
    fields, required = routes.signature_fields("search")
    assert required == ("query",)
    assert fields == {
        "query": {"type": "string"},
        "k": {"type": ["integer", "null"], "minimum": -(2**63), "maximum": 2**63 - 1},
        "project": {"type": ["string", "null"]},
        "kind": {"type": ["string", "null"], "enum": [*MEMORY_KINDS, None]},
        "source": {"type": "string", "enum": list(SOURCES)},
        "mode": {"type": "string", "enum": list(MODES)},
        "touch": {"type": "boolean"},
        "exclude_session": {"type": ["string", "null"]},
        "by_meaning": {"type": "integer", "minimum": -(2**63), "maximum": 2**63 - 1},
        "expand": {"type": "boolean"},
    }
    assert routes.signature_fields("feedback")[0]["verdict"]["enum"] == list(VERDICTS)
    assert routes.signature_fields("remember")[0]["tags"] == {
        "type": "array",
        "items": {"type": "string"},
    }
    assert routes.signature_fields("purge_expired") == ({"now": {"type": ["number", "null"]}}, ())

    def odd(engine, when: datetime, *, loose: Any = None): ...

    def spread(engine, **options: Any): ...

    for function, problem in ((odd, "no JSON Schema for when: datetime"), (spread, "own fields")):
        monkeypatch.setattr(routes, "_target", lambda op, f=function: f)
        with pytest.raises(TypeError, match=problem):
            routes.signature_fields("probe")


def test_path_parameters_and_added_routes():
    def hook(ctx, host: str, event: str, **payload):
        return {"host": host, "event": event}

    extra = Route("POST", "/v1/probe/{host}/{event}", hook, "A probe.",
                  {"host": {"type": "string"}, "event": {"type": "string"}})  # fmt: skip
    add(extra)
    try:
        route, values = find("POST", "/v1/probe/claude-code/UserPromptSubmit")
        assert route is extra and values == {"host": "claude-code", "event": "UserPromptSubmit"}
        assert "/v1/probe/{host}/{event}" in openapi.spec()["paths"]
        ctx = routes.Context(engine=None)
        status, payload = routes.respond(ctx, "POST", "/v1/probe/dsh/end", b'{"x": 1}')
        assert status == 400 and "unknown field(s) x" in payload["error"]
        status, payload = routes.respond(ctx, "POST", "/v1/probe/open%20code/idle", b"")
        assert (status, payload) == (200, {"result": {"host": "open code", "event": "idle"}})
        with pytest.raises(ValueError, match="exists"):
            add(extra)
    finally:
        ROUTES.remove(extra)
    with pytest.raises(ValueError, match="path parameters without a field"):
        add(Route("GET", "/v1/x/{y}", hook, "No field for y."))
    with pytest.raises(ApiError, match="no route"):
        find("POST", "/v1/probe/claude-code/UserPromptSubmit")


def test_records_come_back_as_the_same_objects():
    line = Line("以后代码注释都用英文", "m_1", 12.5, 0.75, "pref")
    records = [
        Memory("m_1", "pref", "t", "b", "", 3, 1.5e9, 1.6e9, tags=("a", "b"), evidence=("t_1",)),
        Turn("s", "user", "hi", 1.5e9, id="t_1", seq=1, kind="chat", kind_conf=0.9),
        Card("c_1", "summary", "pref", ("t_1", "t_2"), 0.8, created=1.7e9),
        Hit("m_1", "pref", "text", 0.123456789, "", 1.5e9, {"explain": {"dense": {}}}),
        Written("merged", "m_1", "near-duplicate"),
        Weave("text", {"knowledge": (line,), "nudge": ()}, 10, 600),
        Block("nudge", (line,), "mnemoweave", 1.0),
        Skill("git-release", "Tag", ("release",), ("git tag",), ("https://x.org",), 2),
        SessionEvent("start", "s", "claude-code", "p", 1.5e9, "startup"),
    ]
    for record in records:
        assert decode(encode(record)) == record
    wired = encode(records[0])
    assert wired["_type"] == "Memory" and wired["created"] == 1.5e9 and wired["tags"] == ["a", "b"]
    assert decode([{"a": [1, {"_type": "Written", "action": "new", "id": "m_2"}]}]) == [
        {"a": [1, Written("new", "m_2")]}
    ]


def _modules(code: str) -> set[str]:
    run = [sys.executable, "-c", f"{code}; import sys; print(' '.join(sys.modules))"]
    return set(subprocess.run(run, capture_output=True, text=True, timeout=60).stdout.split())


def test_importing_the_client_loads_the_standard_library_only():
    loaded = _modules("import mnemoweave.hosts.client") - _modules("pass")  # what the import adds
    ours = {name for name in loaded if name.split(".")[0] == "mnemoweave"}
    assert ours == {"mnemoweave", "mnemoweave.hosts", "mnemoweave.hosts.client"}
    foreign = {n for n in loaded - ours if n.split(".")[0] not in sys.stdlib_module_names}
    assert not foreign, foreign
    heavy = {"click", "numpy", "sqlite3", "http.client", "ssl", "email", "subprocess"}
    assert not heavy & loaded, heavy & loaded


def test_every_engine_call_of_the_cli_can_go_through_the_daemon():
    """A CLI command calls the store through `engine.X`: X must be an operation of the route
    table, a RemoteEngine method, or a command that refuses while a daemon runs (reindex)."""
    from pathlib import Path

    from mnemoweave.daemon.remote import RemoteEngine
    from mnemoweave.daemon.routes import operations

    commands = list((Path(routes.__file__).parents[1] / "cli").glob("*.py"))
    assert len(commands) > 10
    used = set()
    for path in commands:
        used |= set(re.findall(r"\bengine\.([a-z_]+)\(", path.read_text(encoding="utf-8")))
    missing = {
        name
        for name in used - {"reindex"}
        if name not in operations() and name not in vars(RemoteEngine)
    }
    assert not missing, f"no route for: {missing}"


def test_no_route_takes_a_path_to_open():
    """Files are read and written by the CLI; the API takes records and returns contents."""
    pathish = {"path", "paths", "directory", "dir", "file", "filename"}
    assert not [(r.method, r.path) for r in ROUTES if pathish & set(r.fields)]
