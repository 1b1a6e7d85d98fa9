"""The API's route table: one entry per route drives dispatch, RemoteEngine and OpenAPI.

A route has a method, a path (`{name}` segments are path parameters), a handler, the
fields of its request (a JSON Schema each, in the order a caller passes them positionally)
and a summary. Most handlers run an operation: an Engine method, or "module.function" for
operations kept in modules. An operation's fields are its parameters, read from its
signature (`signature_fields`: the annotation gives the type, and a parameter named in
VALUES takes one of those values), so they are declared once, by the operation itself;
only a handler that adapts its arguments lists its own. RemoteEngine calls the same
entries.

Another module adds its routes with `add(Route(...))` before the daemon starts; its
handlers get the same Context (the engine, used under the engine lock) and arguments.
"""

from __future__ import annotations

import inspect
import json
import logging
import re
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from importlib import import_module
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from mnemoweave.daemon.schema import (
    ANY,
    BOOL,
    INT,
    OBJECT,
    OPT_INT,
    OPT_KIND,
    OPT_NUM,
    OPT_STR,
    ROLE,
    STR,
    STRS,
    array,
    from_text,
    one_of,
    problem,
    ref,
)
from mnemoweave.daemon.wire import decode, encode
from mnemoweave.errors import InvalidInput, MnemoweaveError, NotFound
from mnemoweave.hosts.client import encodable
from mnemoweave.model import (
    DECISIONS,
    MEMORY_KINDS,
    MEMORY_STATUSES,
    MODES,
    ROLES,
    SESSION_EVENTS,
    SOURCES,
    VERDICTS,
    SessionEvent,
    Turn,
)
from mnemoweave.store.damage import StoreDamaged

log = logging.getLogger("mnemoweave.daemon")
Handler = Callable[..., Any]  # handler(ctx, **arguments) -> result


@dataclass
class Context:
    """What a handler may use: the daemon's engine and the daemon's own state.

    A handler may leave work for after its answer (`defer`): a worker runs it once the
    answer is sent (`wake` tells it), and any request under the engine lock runs what is
    still left before its own work, so every answer sees every earlier write."""

    engine: Any
    state: Callable[[], dict[str, Any]] = dict
    lock: threading.Lock = field(default_factory=threading.Lock)  # serialises engine calls
    later: deque[Callable[[], None]] = field(default_factory=deque)
    wake: Callable[[], None] = lambda: None  # called once an answer that deferred work is sent
    web: Any = None  # the web page's listener and sign-in (daemon/web.py), when serving

    def defer(self, work: Callable[[], None]) -> None:
        self.later.append(work)

    def settle(self) -> None:
        """Run the deferred work, oldest first (the caller holds the lock). Work that fails
        is logged: it never fails the request that happens to run it."""
        if not self.later:
            return
        self.engine.settling = True  # no remote model is asked meanwhile
        try:
            while self.later:
                work = self.later.popleft()
                try:
                    work()
                except Exception:
                    log.exception("work left for after an answer failed")
        finally:
            self.engine.settling = False


@dataclass(frozen=True)
class Route:
    method: str
    path: str
    handler: Handler
    summary: str
    fields: dict[str, dict[str, Any]] = field(default_factory=dict)  # in call order
    required: tuple[str, ...] = ()
    returns: dict[str, Any] = field(default_factory=dict)  # JSON Schema of "result"
    op: str = ""  # the operation RemoteEngine exposes under this name ("" for none)
    engine: bool = True  # runs under the engine lock
    raw: bool = False  # answers with the result itself, not {"result": ...}

    @cached_property
    def path_params(self) -> tuple[str, ...]:
        return tuple(re.findall(r"{(\w+)}", self.path))

    @cached_property
    def pattern(self) -> re.Pattern[str]:
        return re.compile(re.sub(r"{(\w+)}", r"(?P<\1>[^/]*)", self.path))

    def location(self, name: str) -> str:
        """Where a field travels: in the path, the query string (GET) or the JSON body."""
        if name in self.path_params:
            return "path"
        return "query" if self.method == "GET" else "body"


class ApiError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def _target(op: str) -> Callable[..., Any]:
    """The function an operation runs: an Engine method, or "module.function" of the
    package, each taking the engine first."""
    module, _, name = op.rpartition(".")
    if module:
        found: Callable[..., Any] = getattr(import_module(f"mnemoweave.{module}"), name)
        return found
    from mnemoweave.engine import Engine

    method: Callable[..., Any] = getattr(Engine, name)
    return method


def _run(op: str) -> Handler:
    module, _, name = op.rpartition(".")

    def handler(ctx: Context, **arguments: Any) -> Any:
        if module:
            return _target(op)(ctx.engine, **arguments)
        return getattr(ctx.engine, name)(**arguments)

    return handler


# A parameter of one of these names takes one of these values, in every operation.
VALUES: dict[str, tuple[str, ...]] = {
    "kind": MEMORY_KINDS,
    "role": ROLES,
    "source": SOURCES,
    "mode": MODES,
    "status": MEMORY_STATUSES,
    "decision": DECISIONS,
    "verdict": VERDICTS,
}
# the JSON Schema of each parameter annotation the operations use
_ANNOTATIONS: dict[str, dict[str, Any]] = {
    "str": STR,
    "int": INT,
    "float": {"type": "number"},
    "bool": BOOL,
    "Sequence[str]": STRS,
    "Iterable[dict[str, Any]]": array(OBJECT),
}


def _schema(op: str, parameter: inspect.Parameter) -> dict[str, Any]:
    annotation = str(parameter.annotation)
    nullable = annotation.endswith(" | None")
    base = annotation.removesuffix(" | None")
    if base == "str" and parameter.name in VALUES:
        return one_of(*VALUES[parameter.name], nullable=nullable)
    if base not in _ANNOTATIONS:
        raise TypeError(f"{op}: no JSON Schema for {parameter.name}: {annotation}")
    schema = _ANNOTATIONS[base]
    if not nullable:
        return schema
    return schema | {"type": [schema["type"], "null"]}


def signature_fields(op: str) -> tuple[dict[str, dict[str, Any]], tuple[str, ...]]:
    """An operation's fields (in call order) and the required ones, from its signature."""
    parameters = list(inspect.signature(_target(op)).parameters.values())[1:]  # the engine
    fields, required = {}, []
    for parameter in parameters:
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            raise TypeError(f"{op}: *args and **options need the route's own fields")
        fields[parameter.name] = _schema(op, parameter)
        if parameter.default is parameter.empty:
            required.append(parameter.name)
    return fields, tuple(required)


def operation(
    method: str,
    path: str,
    op: str,
    summary: str,
    returns: dict[str, Any] = ANY,
    handler: Handler | None = None,
    fields: dict[str, dict[str, Any]] | None = None,
    required: tuple[str, ...] = (),
) -> Route:
    """A route that runs an operation (by default the Engine method or function `op`). Its
    fields are the operation's parameters, unless a handler that adapts them gives its own."""
    if fields is None:
        fields, required = signature_fields(op)
    return Route(method, path, handler or _run(op), summary, fields, required, returns, op)


# --- handlers that are more than a call ---------------------------------------------------


def _daemon(ctx: Context) -> dict[str, Any]:
    return ctx.state()


def _openapi(ctx: Context) -> dict[str, Any]:
    from mnemoweave.daemon.openapi import spec

    return spec()


def _session_event(ctx: Context, session: str, event: str, **details: Any) -> None:
    ctx.engine.handle(SessionEvent(event, session, **details))


def _web(ctx: Context) -> Any:
    if ctx.web is None:
        raise ApiError(503, "the web page is served by the daemon only (`mnemoweave ui`)")
    return ctx.web


def _open_ui(ctx: Context, port: int | None = None) -> dict[str, Any]:
    if port is not None and not 0 <= port <= 65535:
        raise InvalidInput(f"use a port 1-65535 (or 0 for any free one), got {port}")
    try:
        opened: dict[str, Any] = _web(ctx).open(port or 0)
        return opened
    except OSError as exc:
        raise ApiError(409, f"cannot listen on 127.0.0.1:{port}: {exc.strerror or exc}") from None


def _ui_login(ctx: Context, code: str) -> dict[str, str]:
    signed: dict[str, str] | None = _web(ctx).login(code)
    if signed is None:
        raise ApiError(401, "this sign-in link was used or has expired: run `mnemoweave ui`")
    return signed


def _weave(ctx: Context, **arguments: Any) -> Any:
    """The weave answers first: what it records (the lines a session received) is written
    once the answer is sent, as for the hooks."""
    with ctx.engine.deferring(ctx.defer):
        return ctx.engine.weave(**arguments)


def _classify(ctx: Context, text: str, role: str = "user") -> Any:
    if not text.strip():
        raise InvalidInput("nothing to classify: the text is empty")
    return ctx.engine.classify(Turn("api", role, text))


_REVIEW_OPTIONS = {
    "accept": {"kind", "summary", "title", "project", "replaces", "keep_both", "share"},
    "reject": {"why"},
}


def _review(ctx: Context, ref: str, decision: str, **options: Any) -> Any:
    misplaced = sorted(set(options) - _REVIEW_OPTIONS[decision])
    if misplaced:
        other = "reject" if decision == "accept" else "accept"
        raise InvalidInput(f"{', '.join(misplaced)}: only with {other}")
    return ctx.engine.review(ref, decision, **options)


def _teach(ctx: Context, name: str, **parts: Any) -> Any:
    every = {"summary": "", "triggers": (), "steps": (), "source_urls": ()} | parts
    return ctx.engine.teach_skill(name, **every)  # reports every missing part at once


def _import(ctx: Context, records: list[Any]) -> Any:
    from mnemoweave.capture.file_formats import MemoryRecord

    try:
        decoded = [decode(record) for record in records]
    except (ValueError, TypeError, KeyError) as exc:
        raise InvalidInput(f"import takes Turn and MemoryRecord records: {exc}") from None
    if not all(isinstance(record, Turn | MemoryRecord) for record in decoded):
        raise InvalidInput("import takes Turn and MemoryRecord records only")
    return ctx.engine.import_records(decoded)


# --- the table -----------------------------------------------------------------------------

ID = STR
WRITTEN = ref("Written")
# fmt: off
ROUTES: list[Route] = [
    Route("GET", "/openapi.json", _openapi, "This API's OpenAPI 3.1 schema.", engine=False,
          raw=True, returns=OBJECT),
    Route("GET", "/v1/daemon", _daemon,
          "The daemon: pid, start time, uptime, socket, request counts, last error.",
          engine=False, returns=ref("DaemonState")),
    Route("POST", "/v1/ui", _open_ui,
          "Open the web page's loopback listener (on `port`, else daemon_port, else a free"
          " port) if it is not open, and make a one-time sign-in URL.",
          {"port": OPT_INT}, engine=False, returns=OBJECT),
    Route("POST", "/v1/ui/login", _ui_login,
          "Swap a one-time sign-in code (from `POST /v1/ui`) for the bearer token.",
          {"code": STR}, ("code",), engine=False, returns=OBJECT),
    operation("GET", "/v1/status", "status",
              "What is stored, where, and which versions.", OBJECT),
    operation("GET", "/v1/retrieval", "retrieval_mode",
              "The retrieval mode in words (hybrid or lexical-only, and why).", STR),
    operation("POST", "/v1/turns", "ingest",
              "Store one raw turn; it is classified, and one that is not chat becomes a card.",
              WRITTEN),
    operation("POST", "/v1/turns/batch", "ingest_many",
              "Store many raw turns in one transaction (backfills); all are checked first.",
              array(WRITTEN)),
    Route("POST", "/v1/sessions/{session}/{event}", _session_event,
          "A session event (start, idle, pre_compact, end) for the plugins to act on.",
          {"session": STR, "event": one_of(*SESSION_EVENTS), "host": STR, "project": STR,
           "ts": OPT_NUM, "source": STR}, ("session", "event"), {"type": "null"}),
    operation("POST", "/v1/weave", "weave",
              "The context for the next model turn: scene, knowledge and nudge tiers.",
              ref("Weave"), _weave),
    operation("POST", "/v1/search", "search",
              "Hybrid search over memories and/or raw turns, best first.", array(ref("Hit"))),
    operation("POST", "/v1/classify", "classify",
              "The kind of a turn and a confidence.", ref("Classification"), _classify,
              {"text": STR, "role": ROLE}, ("text",)),
    operation("POST", "/v1/memories", "remember",
              "Store a memory; an exact or near duplicate in the same scope merges.", WRITTEN),
    operation("GET", "/v1/memories", "list_memories",
              "Memories newest first, by status (active, superseded or trashed), paged.",
              array(ref("Memory"))),
    operation("GET", "/v1/records/{ref}", "get",
              "One memory (m_N), raw turn (t_N) or card (c_N), trashed memories included.",
              {"anyOf": [ref("Memory"), ref("Turn"), ref("Card")]}),
    operation("GET", "/v1/records/{ref}/evidence", "evidence",
              "The raw turns behind a memory or card, in session order.", array(ref("Turn"))),
    operation("POST", "/v1/memories/{ref}/edit", "edit",
              "Rewrite an active memory in place: its text, and its kind or title (the old"
              " text stays in the audit).", WRITTEN),
    operation("POST", "/v1/memories/{ref}/forget", "forget",
              "Move a memory to the trash.", WRITTEN),
    operation("POST", "/v1/memories/{ref}/restore", "restore",
              "Take a memory out of the trash.", WRITTEN),
    operation("POST", "/v1/records/{ref}/purge", "purge",
              "Delete a memory or turn for good, with its index entries and audit content.",
              WRITTEN),
    operation("POST", "/v1/trash/purge", "purge_expired",
              "Purge memories trashed longer than trash_days.", array(STR)),
    operation("POST", "/v1/distill", "distill",
              "Propose cards from the turns not yet distilled (oldest first).",
              array(ref("Card"))),
    operation("GET", "/v1/cards", "pending", "Candidate cards awaiting review.",
              array(ref("Card"))),
    operation("POST", "/v1/cards/{ref}/review", "review",
              "Accept a pending card (kind, summary, title, project: its scope, '' for"
              " global) or reject it (why). An acceptance that would clash with an active"
              " memory is held (action `held`, the card names it in `conflicts`) until it"
              " comes with `replaces` (that memory is superseded) or `keep_both`; `share`: team.",
              WRITTEN, _review,
              {"ref": ID, "decision": one_of(*DECISIONS), "kind": OPT_KIND,
               "summary": OPT_STR, "title": OPT_STR, "project": OPT_STR,
               "replaces": OPT_STR, "keep_both": BOOL, "share": BOOL, "why": STR},
              ("ref", "decision")),
    operation("POST", "/v1/memories/{ref}/feedback", "feedback",
              "useful / wrong move a memory's weight; outdated retires it.", WRITTEN),
    operation("POST", "/v1/memories/{old}/supersede", "supersede",
              "`new` replaces `old` (kept for audit, no longer surfacing).", WRITTEN),
    operation("GET", "/v1/turns", "rehydrate",
              "The raw turns of a session or time window, or those matching words.",
              array(ref("Turn"))),
    operation("GET", "/v1/sessions", "sessions",
              "Sessions newest first, with their turn and woven prompt counts, paged.",
              array(OBJECT)),
    operation("GET", "/v1/sessions/{session}/injections", "injections",
              "What the weave put before each prompt of a session: {ts, refs, tokens}.",
              array(OBJECT)),
    operation("GET", "/v1/threads", "unanswered",
              "User turns no assistant turn has answered yet, per session.",
              array(ref("Turn"))),
    operation("POST", "/v1/skills", "teach_skill",
              "Save or update a skill (every missing piece is reported at once).",
              ref("Skill"), _teach, signature_fields("teach_skill")[0], ("name",)),
    operation("GET", "/v1/skills", "skills", "Every skill, most used first.",
              array(ref("Skill"))),
    operation("POST", "/v1/skills/check", "check_skill",
              "Is a task known, partly known or unknown? With the best matching skill.", OBJECT),
    operation("POST", "/v1/skills/{name}/load", "load_skill",
              "A skill's full steps (counts a use).", ref("Skill")),
    operation("GET", "/v1/skills/queue", "skill_queue",
              "The learning queue: tasks a check found no skill for, the most asked first.",
              array(OBJECT)),
    operation("POST", "/v1/skills/queue/close", "close_queued_skill",
              "Close a learning queue entry (its number or its task).", OBJECT),
    operation("GET", "/v1/entities", "entities",
              "The entities (services, libraries, files, people...) the active memories of a"
              " scope name, the most named first.", array(OBJECT)),
    operation("GET", "/v1/entities/{name}", "entity",
              "One entity: its names, memories (superseded ones past), typed relations,"
              " neighbours and timeline, newest first.", OBJECT),
    operation("POST", "/v1/entities/{name}/merge", "merge_entities",
              "Take `other` as another name of the entity `name` (kept across rebuilds).",
              OBJECT),
    operation("GET", "/v1/projects", "projects",
              "Every project the store holds, with its key, name and rows per table.",
              array(OBJECT)),
    operation("POST", "/v1/projects/rename", "rename_project",
              "Move everything of project `old` to `new` (merging when `new` holds rows).",
              OBJECT),
    operation("GET", "/v1/hygiene", "hygiene",
              "Near-duplicates, stale memories and index drift; changes nothing.", OBJECT),
    operation("POST", "/v1/consolidate", "consolidate_propose",
              "Propose a consolidation run (duplicates, conflicts, chains, stale); changes no"
              " memory.", OBJECT),
    operation("POST", "/v1/consolidate/{run}/apply", "consolidate_apply",
              "Apply a run's items not applied yet (all, or `only` those; `settle`: a conflict"
              " keeps the newer memory); refused when a memory changed.", OBJECT),
    operation("POST", "/v1/consolidate/{run}/rollback", "consolidate_rollback",
              "Write back everything an applied run changed.", OBJECT),
    operation("POST", "/v1/import", "import_records",
              "Import turns and memories (records the caller read from its files), all or "
              "nothing.", OBJECT, _import, {"records": array(OBJECT)}, ("records",)),
    operation("POST", "/v1/import/file", "import_text",
              "Import one file's text (.jsonl turns, .md memories, by its name), all or "
              "nothing.", OBJECT),
    operation("GET", "/v1/export", "export_files",
              "The export as file name -> content: memories as Markdown, turns as JSONL.",
              OBJECT),
    operation("POST", "/v1/doctor", "doctor",
              "Check the store and its indexes; with repair, rebuild what can be rebuilt.",
              array(ref("Check"))),
]
# fmt: on


def add(*routes: Route) -> None:
    """Add routes to the table (before the daemon starts; OpenAPI lists them too)."""
    for route in routes:
        undeclared = set(route.path_params) - set(route.fields)
        if undeclared:
            raise ValueError(f"{route.path}: path parameters without a field: {undeclared}")
        taken = [r for r in ROUTES if (r.method, r.path) == (route.method, route.path)]
        if taken or (route.op and route.op in operations()):
            raise ValueError(f"{route.method} {route.path} ({route.op or 'no op'}) exists")
        ROUTES.append(route)


def operations() -> dict[str, Route]:
    """The routes RemoteEngine can call, by operation name."""
    return {route.op: route for route in ROUTES if route.op}


# --- dispatch ------------------------------------------------------------------------------


def find(method: str, path: str) -> tuple[Route, dict[str, str]]:
    """The route for a request (literal paths before parameterised ones) and its path values."""
    allowed = []
    for route in sorted(ROUTES, key=lambda r: len(r.path_params)):
        found = route.pattern.fullmatch(path)
        if found is None:
            continue
        if route.method == method:
            return route, {name: unquote(value) for name, value in found.groupdict().items()}
        allowed.append(route.method)
    if allowed:
        raise ApiError(405, f"{method} is not allowed on {path}; use {', '.join(allowed)}")
    raise ApiError(404, f"no route {method} {path}")


def _body(raw: bytes) -> dict[str, Any]:
    if not raw.strip():
        return {}
    try:
        data = json.loads(raw)
    except ValueError as exc:
        raise ApiError(400, f"the request body is not valid JSON ({exc})") from None
    except RecursionError:
        raise ApiError(400, "the request body is nested too deeply") from None
    if not isinstance(data, dict):
        raise ApiError(400, "the request body must be a JSON object")
    body: dict[str, Any] = encodable(data)
    return body


def arguments(route: Route, path_values: dict[str, str], query: str, raw: bytes) -> dict[str, Any]:
    """The handler's arguments from the path, query string and body, checked against the
    route's fields (unknown and missing fields are refused by name)."""
    values: dict[str, Any] = {
        name: from_text(name, text, route.fields[name]) for name, text in path_values.items()
    }
    if route.method == "GET":
        given = {
            name: from_text(name, texts[-1], route.fields.get(name, STR))
            for name, texts in parse_qs(query, keep_blank_values=True).items()
        }
        where = "query"
    else:
        given, where = _body(raw), "body"
    accepted = [name for name in route.fields if route.location(name) == where]
    unknown = sorted(set(given) - set(accepted))
    if unknown:
        known = ", ".join(accepted) or "none"
        raise ApiError(400, f"unknown field(s) {', '.join(unknown)}; accepted: {known}")
    values |= given
    missing = [name for name in route.required if name not in values]
    if missing:
        raise ApiError(400, f"missing field(s): {', '.join(missing)}")
    for name, value in values.items():
        found = problem(name, value, route.fields[name])
        if found:
            raise ApiError(400, found)
    return values


def respond(ctx: Context, method: str, target: str, raw: bytes) -> tuple[int, Any]:
    """Status and JSON payload for one request. Errors are {"error": one line}: 400 for bad
    input, 404 for unknown ids and routes, 500 (logged with its trace) for anything else."""
    parts = urlsplit(target)
    try:
        route, path_values = find(method, parts.path)
        values = arguments(route, path_values, parts.query, raw)
        if route.engine:
            with ctx.lock:
                ctx.settle()
                result = route.handler(ctx, **values)
        else:
            result = route.handler(ctx, **values)
        return 200, result if route.raw else {"result": encode(result)}
    except ApiError as exc:
        return exc.status, {"error": str(exc)}
    except StoreDamaged as exc:  # a hook spools what it could not store
        return 503, {"error": str(exc)}
    except NotFound as exc:
        return 404, {"error": str(exc)}
    except MnemoweaveError as exc:
        return 400, {"error": str(exc)}
    except Exception as exc:
        log.exception("%s %s failed", method, parts.path)
        message = " ".join(str(exc).split())[:300]
        return 500, {"error": f"internal error: {type(exc).__name__}: {message}"}
