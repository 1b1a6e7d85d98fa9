"""The web UI benchmark: its pure parts, and a tiny lexical run whose every page answers 200
and which stops its daemon."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

import hooks
import ui
from ui import _join, request_key, session_turns

TINY_WITHIN = 240.0  # seconds the tiny run may take in all


def test_relative_file_names_resolve_under_the_page() -> None:
    assert _join("/ui/", "app.js") == "/ui/app.js"
    assert _join("/ui/vendor/", "../app.css") == "/ui/app.css"
    assert _join("/ui/", "./vendor/preact-htm.js") == "/ui/vendor/preact-htm.js"


def test_requests_are_keyed_without_their_ids_and_query() -> None:
    assert request_key("GET", "/v1/records/c_12/evidence?x=1") == "GET /v1/records/{ref}/evidence"
    assert request_key("GET", "/v1/memories?n=50") == "GET /v1/memories"
    assert (
        request_key("GET", "/v1/sessions/ui-bench-001/injections")
        == "GET /v1/sessions/{session}/injections"
    )


def test_sessions_alternate_roles_in_both_languages() -> None:
    rows = session_turns(3, 4, ["/src/a", "/src/b"])
    assert len(rows) == 12 and len({row["session"] for row in rows}) == 3
    assert [row["role"] for row in rows[:4]] == ["user", "assistant", "user", "assistant"]
    assert {row["project"] for row in rows} == {"/src/a", "/src/b"}
    texts = " ".join(row["text"] for row in rows)
    assert "超时" in texts and "timing out" in texts


@pytest.mark.slow
def test_a_tiny_run_answers_every_page_and_stops_its_daemon(tmp_path: Path) -> None:
    started, clock = len(hooks.STARTED), time.monotonic()
    report = ui.measure(
        [50],
        calls=3,
        warmup=1,
        embedder="none",
        models=tmp_path / "none",
        shape={"cards": 8, "sessions": 3, "turns": 6},
    )
    assert time.monotonic() - clock < TINY_WITHIN
    assert set(report["pages"]) == {"50"}
    pages = report["pages"]["50"]
    assert set(pages) == set(ui.PAGES)
    for name, page in pages.items():
        assert page["statuses"] == [200], (name, page)
        assert page["p50"] > 0 and page["p95"] >= page["p50"], (name, page)
        assert page["requests"] >= 1 and page["bytes"] > 0, (name, page)
    assert pages["static"]["requests"] >= 3  # index.html, app.js, app.css at least
    assert pages["review"]["requests"] == 1 + 8
    assert pages["sessions"]["requests"] == 3 and pages["status"]["requests"] == 3
    assert set(pages["status"]["by_request_p50_ms"]) == {
        "GET /v1/status",
        "GET /v1/projects",
        "GET /v1/daemon",
    }
    actions = report["actions"]["50"]
    assert set(actions) == set(ui.ACTIONS)
    assert all(action["statuses"] == [200] for action in actions.values()), actions
    assert report["store"]["50"] == {"memories": 51, "turns": 18, "sessions": 3, "cards": 8}
    assert report["failures"] == {"50": []}
    assert report["target_ms"] == ui.TARGET_MS and set(report["meets"]) == {"50"}
    assert report["mode"].startswith("lexical-only")
    assert {"cpus", "platform"} <= set(report["machine"])
    daemons = hooks.STARTED[started:]
    assert len(daemons) == 1 and all(p.returncode is not None for p in daemons)
