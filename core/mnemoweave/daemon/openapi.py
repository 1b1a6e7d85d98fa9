"""The API's OpenAPI 3.1 schema, generated from the route table that dispatches requests.

`GET /openapi.json` serves it and `openapi.json` beside this module is the published copy
(a test keeps them equal). Rewrite the copy with `python -m mnemoweave.daemon.openapi`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from mnemoweave import __version__
from mnemoweave.daemon.routes import ROUTES, Route
from mnemoweave.daemon.schema import INT, OPT_STR, STR, record_schema, ref
from mnemoweave.daemon.wire import RECORDS

FILE = Path(__file__).with_name("openapi.json")
DESCRIPTION = (
    "Local long-term memory for coding agents. The daemon serves HTTP on the Unix socket "
    "$MNEMOWEAVE_HOME/daemon.sock (mode 0600) and, when `daemon_port` is set or the web "
    "page asks (`POST /v1/ui`), on 127.0.0.1:PORT, where every request needs "
    "`Authorization: Bearer TOKEN` (the token is in $MNEMOWEAVE_HOME/daemon.token; "
    "`POST /v1/ui/login` swaps a one-time code for it) and a loopback Host header, and "
    "every write JSON and no foreign Origin; the web page's files are under /ui/. "
    "Records carry their "
    "class in `_type`; "
    'times are epoch seconds. Every error is {"error": one line}.'
)
COUNTS = {
    "type": "object",
    "properties": {name: INT for name in ("total", "refused", "failed", "in_flight")},
    "required": ["total", "refused", "failed", "in_flight"],
}
DAEMON_STATE = {
    "type": "object",
    "description": "The daemon process (refused: 4xx answers; failed: 5xx answers).",
    "properties": {
        "pid": INT,
        "started": {"type": "number"},
        "uptime": {"type": "number"},
        "socket": STR,
        "home": STR,
        "idle_minutes": {"type": "number"},
        "requests": COUNTS,
        "last_error": {
            "type": ["object", "null"],
            "properties": {"time": {"type": "number"}, "route": STR, "message": STR},
        },
        "log": OPT_STR,
        "tcp": OPT_STR,
        "tcp_error": OPT_STR,
    },
    "required": ["pid", "started", "uptime", "socket", "requests", "last_error"],
}
ERROR = {"type": "object", "properties": {"error": STR}, "required": ["error"]}
ERRORS = {"400": "BadInput", "404": "NotFound", "500": "Failure", "503": "Damaged"}
ERROR_TEXT = {
    "BadInput": "Bad input: a malformed, unknown or missing field, or a refusal",
    "NotFound": "No such record or route",
    "Failure": "Unexpected failure (logged in logs/daemon.log)",
    "Damaged": "The store file is damaged: writes are stopped (`mnemoweave doctor`)",
}


def _json(schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def _text_param(schema: dict[str, Any]) -> dict[str, Any]:
    """A path or query parameter's schema: text has no null (an absent parameter is)."""
    kinds = schema.get("type")
    if not isinstance(kinds, list):
        return schema
    out = schema | {"type": [k for k in kinds if k != "null"]}
    if len(out["type"]) == 1:
        out["type"] = out["type"][0]
    if "enum" in out:
        out["enum"] = [value for value in out["enum"] if value is not None]
    return out


def _operation(route: Route) -> dict[str, Any]:
    operation: dict[str, Any] = {
        "operationId": route.op or route.handler.__name__.strip("_"),
        "summary": route.summary,
    }
    parameters = [
        {
            "name": name,
            "in": route.location(name),
            "required": route.location(name) == "path" or name in route.required,
            "schema": _text_param(schema),
        }
        for name, schema in route.fields.items()
        if route.location(name) != "body"
    ]
    if parameters:
        operation["parameters"] = parameters
    body = [name for name in route.fields if route.location(name) == "body"]
    if body:
        schema: dict[str, Any] = {
            "type": "object",
            "properties": {name: route.fields[name] for name in body},
            "additionalProperties": False,
        }
        needed = [name for name in body if name in route.required]
        if needed:
            schema["required"] = needed
        operation["requestBody"] = {
            "required": bool(needed),
            "content": {"application/json": {"schema": schema}},
        }
    result = (
        route.returns
        if route.raw
        else {"type": "object", "properties": {"result": route.returns}, "required": ["result"]}
    )
    operation["responses"] = {"200": _json(result, "OK")} | {
        status: {"$ref": f"#/components/responses/{name}"} for status, name in ERRORS.items()
    }
    return operation


def spec() -> dict[str, Any]:
    paths: dict[str, dict[str, Any]] = {}
    for route in ROUTES:
        paths.setdefault(route.path, {})[route.method.lower()] = _operation(route)
    schemas = {name: record_schema(name) for name in sorted(RECORDS)}
    schemas |= {"DaemonState": DAEMON_STATE, "Error": ERROR}
    return {
        "openapi": "3.1.0",
        "info": {"title": "mnemoweave daemon", "version": __version__, "description": DESCRIPTION},
        "paths": paths,
        "components": {
            "schemas": schemas,
            "responses": {name: _json(ref("Error"), text) for name, text in ERROR_TEXT.items()},
        },
    }


def render() -> str:
    return json.dumps(spec(), ensure_ascii=False, indent=2) + "\n"


if __name__ == "__main__":
    FILE.write_text(render(), encoding="utf-8")
    print(f"wrote {FILE}")
