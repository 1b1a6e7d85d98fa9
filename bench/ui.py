"""UI: page-open latency of the local web UI: what each page asks the daemon for, over TCP.

The web UI (`mnemoweave ui`, core/mnemoweave/web/) is a static page that reads everything
through the daemon's JSON API on its loopback TCP listener. A page feels instant when what
it fetches on opening arrives within TARGET_MS (200 ms); this benchmark times exactly that,
page by page, against a daemon holding a large store, without a browser (rendering is the
browser's; the daemon's answers are what grows with the store).

Protocol. A data dir gets, in-process before the daemon starts (the daemon holds the store
lock): N memories (corpus.py's `fill`: the bilingual dev cards and fillers over 20
projects and the global scope; `--sizes`, default 10000), `--sessions` sessions of
`--turns` turns each (default 50 x 20; user and assistant in turn, English and Chinese),
three woven prompts recorded per session (`Engine.weave(record=True)`: the session page's
injections), `--cards` pending cards (default 200, each citing a user turn of a session,
written through the store's card table as distill writes them), one skill, and one memory
citing turns (the detail page's evidence). `mnemoweave serve` is then started with the TCP
listener on a free port (MNEMOWEAVE_DAEMON_PORT) and stopped afterwards, whatever happens;
the bearer token is read from $MNEMOWEAVE_HOME/daemon.token.

Each page is timed from the first request sent to the last byte of the last answer
received, its requests sent one after the other over `http.client` to 127.0.0.1 (a new
connection each, as `Connection: close`; the browser may run some in parallel, so this is
conservative), each with `Authorization: Bearer`, the POSTs with `Content-Type:
application/json` and the page's own `Origin`. Requests that depend on an earlier answer
(the evidence of the first cards, the first session's turns) use that answer, as the page
does. The requests are those of core/mnemoweave/web/app.js (read from it; when it changes,
this list must follow). On signing in the shell loads `GET /v1/projects` and `GET
/v1/cards?limit=200` (the nav's pending count, polled every 5 s); the pages then ask:

- static: `GET /ui/` and every file it names under /ui/ (`src`/`href`), and every module
  those scripts import, found by reading them: index.html, app.css, app.js,
  vendor/preact-htm.js (no token, as the browser loads them before signing in)
- memories: `GET /v1/memories?n=50&offset=0&status=active`, and the shell's `GET
  /v1/projects` (the project filter)
- memories-page-50: `GET /v1/memories?n=50&offset=2450&status=active` (Next, 49 times)
- search-en, search-zh: `POST /v1/search {query, k: 20, source: "memories", mode:
  "hybrid"}` (all projects: no `project`), the dev queries (data/dev_queries.jsonl) of
  that language in turn
- memory-detail: `GET /v1/records/m_N`, and `GET /v1/records/m_N/evidence` (app.js asks
  for it when "Show evidence" is clicked; counted here), for a memory citing 3 turns
- review: `GET /v1/cards?limit=200`, then `GET /v1/records/c_N/evidence` for every card
  listed (each card row loads its evidence; the browser sends up to 6 at a time, this
  sends them in turn)
- sessions: `GET /v1/sessions?n=50&offset=0`, then for its first session (app.js: on
  clicking it, both at once) `GET /v1/turns?session=S&limit=500` and `GET
  /v1/sessions/S/injections`
- skills: `GET /v1/skills`
- status: `GET /v1/status`, `GET /v1/projects`, `GET /v1/daemon`

Two actions are timed apart (ACTION_CALLS calls after one warm-up, under "actions", not
held to the target: a person asks for them with a button and waits): the hygiene report
(`GET /v1/hygiene`, every memory against its neighbours) and the export (`GET /v1/export`,
every memory and turn).

Every page is opened `--warmup` times untimed (default 3), then `--calls` times (default
30; `--limit` overrides). Reported per size and page: p50 and p95 in ms, the requests and
bytes of one opening, the HTTP statuses seen (any but 200 is a failure, reported, not
hidden), and the p50 of each kind of request on its own (`by_request_p50_ms`, ids and query
strings left out: which request a slow page waits for). `meets` says whether every page's
p95 is within TARGET_MS, `machine` where it ran. Everything lives in one temporary
directory with a short path, removed afterwards.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import shutil
import socket
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from corpus import fill, prompts
from harness import progress
from hooks import (
    configure,
    daemon,
    data_dir,
    machine,
    make_projects,
    resolve_models,
    short_root,
    subprocess_env,
)
from metrics import percentiles

TARGET_MS = 200.0
REQUEST_TIMEOUT = 60.0  # seconds one request may take before the run fails
PAGE_SIZE = 50
DEEP_PAGE = 50  # memories-page-50: the 50th page of the list
ACTION_CALLS = 5  # timed calls of an action (a button: seconds, not a page opening)
LIMITS = {"cards": 200, "turns": 500}
PAGES = (
    "static",
    "memories",
    "memories-page-50",
    "search-en",
    "search-zh",
    "memory-detail",
    "review",
    "sessions",
    "skills",
    "status",
)
TEXTS = (
    ("Can you check why {c} keeps timing out?", "帮我看看{c}为什么一直超时？"),
    ("The logs show {c} retrying three times before it gives up.", "日志显示{c}重试了三次才放弃。"),
    ("Let's add a read timeout of 10 seconds to {c}.", "给{c}加一个 10 秒的读超时吧。"),
    ("Done: {c} now has the timeout and a test for it.", "好了：{c}已经加上超时，也补了测试。"),
)
COMPONENTS = ("the upload service", "上传服务", "the billing worker", "计费 worker")
SKILL: dict[str, Any] = {
    "name": "release-checklist",
    "summary": "How a release is cut: version bump, changelog, tag, publish",
    "triggers": ["release", "发布"],
    "steps": ["bump the version", "update the changelog", "tag and push", "publish"],
    "source_urls": ["https://example.com/release"],
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--sizes", default="10000", help="memory counts, comma-separated")
    parser.add_argument("--calls", type=int, default=30, help="timed openings per page")
    parser.add_argument("--warmup", type=int, default=3, help="untimed openings per page first")
    parser.add_argument("--cards", type=int, default=200, help="pending cards in the store")
    parser.add_argument("--sessions", type=int, default=50, help="sessions in the store")
    parser.add_argument("--turns", type=int, default=20, help="turns per session")


# --- the store ------------------------------------------------------------------------------


def session_turns(sessions: int, turns: int, projects: Sequence[str]) -> list[dict[str, Any]]:
    """`sessions` sessions of `turns` turns (user, assistant, ...), en and zh in turn."""
    rows, start = [], time.time() - sessions * 3600
    for s in range(sessions):
        component = COMPONENTS[s % len(COMPONENTS)]
        zh = int(any("\u4e00" <= ch <= "\u9fff" for ch in component))
        for t in range(turns):
            text = TEXTS[t % len(TEXTS)][zh].format(c=component)
            rows.append(
                {
                    "session": f"ui-bench-{s:03d}",
                    "role": "user" if t % 2 == 0 else "assistant",
                    "text": f"{text} (#{s}.{t})",
                    "host": "claude-code",
                    "project": projects[s % len(projects)],
                    "ts": start + s * 3600 + t * 30,
                }
            )
    return rows


def load(
    home: Path,
    models: Path,
    n: int,
    projects: dict[str, str],
    chosen: dict[str, str],
    shape: dict[str, int],
) -> dict[str, Any]:
    """Store the memories, sessions, woven prompts, cards and skill, in-process."""
    from dataclasses import replace

    from mnemoweave import Engine
    from mnemoweave.config import load_config
    from mnemoweave.store import cards as cards_table
    from mnemoweave.store.db import transaction

    config = replace(
        load_config(home),
        embedder=chosen["MNEMOWEAVE_EMBEDDER"],
        second_embedder=chosen["MNEMOWEAVE_SECOND_EMBEDDER"],
    )
    started = time.perf_counter()
    keys = list(projects.values())
    with data_dir(home, models), Engine(home, config) as engine:
        retrieval = engine.retrieval_mode()
        _, stored = fill(engine, n, projects)
        rows = session_turns(shape["sessions"], shape["turns"], keys)
        written = engine.ingest_many(rows)
        user_turns = [
            (w.ref, row) for w, row in zip(written, rows, strict=True) if row["role"] == "user"
        ]
        for s in range(shape["sessions"]):
            asked = [row for _, row in user_turns if row["session"] == f"ui-bench-{s:03d}"]
            for row in asked[:3]:
                engine.weave(
                    row["text"], session=row["session"], project=row["project"], record=True
                )
        now = time.time()
        kinds = ("conclusion", "fact", "pref", "skill", "mission")
        with transaction(engine.db) as db:
            for c in range(shape["cards"]):
                ref, row = user_turns[c % len(user_turns)]
                cards_table.insert(
                    db,
                    summary=f"{row['text']} [card {c}]",
                    suggested_kind=kinds[c % len(kinds)],
                    evidence=[ref],
                    confidence=0.8,
                    project=row["project"],
                    now=now - c,
                )
        cited = engine.remember(
            "The upload service needs a 10 second read timeout; without it uploads hang.",
            kind="conclusion",
            project=keys[0],
            evidence=[ref for ref, _ in user_turns[:3]],
        )
        engine.teach_skill(**SKILL)
        counts = {
            "memories": len(stored) + 1,
            "turns": len(rows),
            "sessions": shape["sessions"],
            "cards": len(engine.pending(limit=shape["cards"] + 1)),
        }
    return {
        "detail": cited.id,
        "counts": counts,
        "seconds": round(time.perf_counter() - started, 1),
        "retrieval": retrieval,
    }


# --- requests -------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class Opening:
    """One opening of a page: its requests' statuses, bytes and ms (by request_key)."""

    statuses: list[int] = field(default_factory=list)
    size: int = 0
    ms: dict[str, list[float]] = field(default_factory=dict)


def request_key(method: str, path: str) -> str:
    """`GET /v1/records/{ref}/evidence`: a request without its query and its ids."""
    path = re.sub(r"/[mtc]_\d+", "/{ref}", path.split("?", 1)[0])
    path = re.sub(r"^/v1/sessions/[^/]+/", "/v1/sessions/{session}/", path)
    return f"{method} {path}"


class Api:
    """The daemon's TCP listener as the page talks to it."""

    def __init__(self, port: int, token: str) -> None:
        self.port, self.token = port, token
        self.origin = f"http://127.0.0.1:{port}"

    def fetch(
        self, opening: Opening, method: str, path: str, body: Any = None, auth: bool = True
    ) -> bytes:
        """One request on a new connection; the raw answer (its status noted)."""
        headers = {"Authorization": f"Bearer {self.token}"} if auth else {}
        data = None
        if method == "POST":
            data = json.dumps({} if body is None else body, ensure_ascii=False).encode()
            headers |= {"Content-Type": "application/json", "Origin": self.origin}
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=REQUEST_TIMEOUT)
        started = time.perf_counter()
        try:
            connection.request(method, path, body=data, headers=headers)
            answer = connection.getresponse()
            raw = answer.read()
        finally:
            connection.close()
        elapsed = (time.perf_counter() - started) * 1000
        opening.statuses.append(answer.status)
        opening.size += len(raw)
        opening.ms.setdefault(request_key(method, path), []).append(elapsed)
        return raw

    def result(self, opening: Opening, method: str, path: str, body: Any = None) -> Any:
        """The `result` of a JSON answer (None when it is not one)."""
        raw = self.fetch(opening, method, path, body)
        try:
            return json.loads(raw).get("result")
        except (ValueError, AttributeError):
            return None


def static_files(api: Api) -> list[str]:
    """/ui/ and what it names under /ui/, and the modules its scripts import, in order."""
    found, queue = [], ["/ui/"]
    while queue:
        path = queue.pop(0)
        if path in found:
            continue
        found.append(path)
        if not path.endswith(("/", ".html", ".js")):
            continue
        text = api.fetch(Opening(), "GET", path, auth=False).decode("utf-8", "replace")
        base = path if path.endswith("/") else path.rsplit("/", 1)[0] + "/"
        named = re.findall(r"""(?:src|href)\s*=\s*["']([^"'#?]+)""", text)
        named += re.findall(r"""(?:\bfrom|\bimport)\s*\(?\s*["']([^"']+\.js)["']""", text)
        for ref in named:
            if "://" in ref or ref.startswith("data:"):
                continue
            target = ref if ref.startswith("/") else _join(base, ref)
            if target.startswith("/ui/"):
                queue.append(target)
    return found


def _join(base: str, ref: str) -> str:
    parts = base.rstrip("/").split("/")
    for piece in ref.split("/"):
        if piece == "..":
            parts.pop()
        elif piece not in (".", ""):
            parts.append(piece)
    return "/".join(parts)


Page = Callable[[Api, Opening, int], None]


def page_static(files: Sequence[str]) -> Page:
    def opening(api: Api, seen: Opening, call: int) -> None:
        for path in files:
            api.fetch(seen, "GET", path, auth=False)

    return opening


def page_memories(offset: int) -> Page:
    def opening(api: Api, seen: Opening, call: int) -> None:
        api.fetch(seen, "GET", f"/v1/memories?n={PAGE_SIZE}&offset={offset}&status=active")
        if offset == 0:
            api.fetch(seen, "GET", "/v1/projects")

    return opening


def page_search(queries: Sequence[str]) -> Page:
    def opening(api: Api, seen: Opening, call: int) -> None:
        body = {"query": queries[call % len(queries)], "k": 20, "source": "memories"}
        api.fetch(seen, "POST", "/v1/search", body | {"mode": "hybrid"})

    return opening


def page_detail(ref: str) -> Page:
    def opening(api: Api, seen: Opening, call: int) -> None:
        api.fetch(seen, "GET", f"/v1/records/{ref}")
        api.fetch(seen, "GET", f"/v1/records/{ref}/evidence")

    return opening


def page_review(api: Api, seen: Opening, call: int) -> None:
    cards = api.result(seen, "GET", f"/v1/cards?limit={LIMITS['cards']}") or []
    for card in cards:
        api.fetch(seen, "GET", f"/v1/records/{card['id']}/evidence")


def page_sessions(api: Api, seen: Opening, call: int) -> None:
    listed = api.result(seen, "GET", f"/v1/sessions?n={PAGE_SIZE}&offset=0") or []
    if listed:
        session = listed[0]["id"]
        api.fetch(seen, "GET", f"/v1/turns?session={session}&limit={LIMITS['turns']}")
        api.fetch(seen, "GET", f"/v1/sessions/{session}/injections")


def page_gets(*paths: str) -> Page:
    def opening(api: Api, seen: Opening, call: int) -> None:
        for path in paths:
            api.fetch(seen, "GET", path)

    return opening


def pages(api: Api, detail: str, queries: dict[str, list[str]]) -> dict[str, Page]:
    return {
        "static": page_static(static_files(api)),
        "memories": page_memories(0),
        "memories-page-50": page_memories((DEEP_PAGE - 1) * PAGE_SIZE),
        "search-en": page_search(queries["en"]),
        "search-zh": page_search(queries["zh"]),
        "memory-detail": page_detail(detail),
        "review": page_review,
        "sessions": page_sessions,
        "skills": page_gets("/v1/skills"),
        "status": page_gets("/v1/status", "/v1/projects", "/v1/daemon"),
    }


# What a button asks for (not part of opening a page): timed, not held to TARGET_MS.
ACTIONS: dict[str, Page] = {
    "hygiene-report": page_gets("/v1/hygiene"),
    "export": page_gets("/v1/export"),
}


def time_page(api: Api, page: Page, calls: int, warmup: int) -> dict[str, Any]:
    """p50/p95 of `calls` openings after `warmup` untimed ones, with what one opening asked."""
    seen, one, ms = Opening(), Opening(), []
    each: dict[str, list[float]] = {}
    for call in range(warmup):
        page(api, seen, call)
    for call in range(calls):
        one = Opening()
        started = time.perf_counter()
        page(api, one, warmup + call)
        ms.append((time.perf_counter() - started) * 1000)
        seen.statuses += one.statuses
        for key, times in one.ms.items():
            each.setdefault(key, []).extend(times)
    return percentiles(ms) | {
        "requests": len(one.statuses),
        "bytes": one.size,
        "statuses": sorted(set(seen.statuses)),
        "by_request_p50_ms": {key: percentiles(times)["p50"] for key, times in each.items()},
    }


def dev_queries(projects: dict[str, str]) -> dict[str, list[str]]:
    """The dev queries by language (en, zh)."""
    from mnemoweave.text import language

    found: dict[str, list[str]] = {"en": [], "zh": []}
    for prompt in prompts(projects, {}):
        found.setdefault(language(prompt.text), []).append(prompt.text)
    return found


# --- runs -------------------------------------------------------------------------------------


def measure(
    sizes: Sequence[int],
    calls: int,
    warmup: int,
    embedder: str,
    models: Path,
    shape: dict[str, int] | None = None,
) -> dict[str, Any]:
    """The whole benchmark in a temporary root, removed afterwards."""
    shape = {"cards": 200, "sessions": 50, "turns": 20} | (shape or {})
    root, load_before = short_root(), [round(load, 2) for load in os.getloadavg()]
    report: dict[str, Any] = {
        "pages": {},
        "actions": {},
        "store": {},
        "load_seconds": {},
        "daemon_start_seconds": {},
    }
    try:
        (root / "home").mkdir()
        projects = make_projects(root)
        names, mode = resolve_models(embedder, models, root)
        queries = dev_queries(projects)
        progress(f"ui: {mode}; data under {root}")
        retrieval = ""
        for size in sizes:
            home, port = root / f"h{size}", free_port()
            chosen = configure(home, names)
            env = subprocess_env(root, home, chosen) | {"MNEMOWEAVE_DAEMON_PORT": str(port)}
            progress(
                f"ui: storing {size} memories, {shape['cards']} cards, "
                f"{shape['sessions']}x{shape['turns']} turns"
            )
            loaded = load(home, root / "models", size, projects, chosen, shape)
            retrieval = loaded["retrieval"]
            report["store"][str(size)] = loaded["counts"]
            report["load_seconds"][str(size)] = loaded["seconds"]
            with daemon(home, env) as start_seconds:
                report["daemon_start_seconds"][str(size)] = round(start_seconds, 1)
                token = (home / "daemon.token").read_text(encoding="utf-8").strip()
                api = Api(port, token)
                timed: dict[str, Any] = {}
                for name, page in pages(api, loaded["detail"], queries).items():
                    timed[name] = time_page(api, page, calls, warmup)
                    progress(
                        f"ui: {size} memories, {name}: p50 {timed[name]['p50']} ms, "
                        f"p95 {timed[name]['p95']} ms"
                    )
                report["pages"][str(size)] = timed
                acted: dict[str, Any] = {}
                for name, action in ACTIONS.items():
                    acted[name] = time_page(api, action, min(calls, ACTION_CALLS), 1)
                    progress(f"ui: {size} memories, {name}: p50 {acted[name]['p50']} ms")
                report["actions"][str(size)] = acted
        report |= {
            "mode": mode,
            "retrieval": retrieval,
            "target_ms": TARGET_MS,
            "meets": {
                size: all(p["p95"] is not None and p["p95"] <= TARGET_MS for p in timed.values())
                for size, timed in report["pages"].items()
            },
            "failures": {
                size: sorted(name for name, p in timed.items() if p["statuses"] != [200])
                for size, timed in report["pages"].items()
            },
            "calls": {"timed": calls, "warmup": warmup},
            "shape": shape,
            "machine": machine() | {"load_average_before": load_before},
            "requests": "sequential, one connection each, 127.0.0.1, bearer token",
        }
        return report
    finally:
        shutil.rmtree(root, ignore_errors=True)


def run(args: argparse.Namespace) -> dict[str, Any]:
    if args.mode != "default":
        raise SystemExit("ui: --mode does not apply (the page's search asks for hybrid)")
    sizes = sorted({int(size) for size in args.sizes.split(",")})
    shape = {"cards": args.cards, "sessions": args.sessions, "turns": args.turns}
    return measure(sizes, args.limit or args.calls, args.warmup, args.embedder, args.models, shape)
