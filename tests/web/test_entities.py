"""The Entities page in a real Chromium against a real daemon (conftest.py): memories about
a few services written through the daemon's engine name entities; the list shows them, an
entity's page shows its memories (a superseded one past), its relations as sentences and a
neighbourhood graph in SVG whose nodes open the neighbours' pages; a memory's detail links to
the entities it names; a Chinese name works in the URL, an unknown one shows the API's
error, and stored markup shows as text. The selectors are those of app.js's header."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import quote

import pytest
from webui import CSP_WATCH, PROJECT, UI, WAIT_MS, Watch, expect, open_page, screenshot

XSS = "<img src=x onerror=alert(1)>"
GRAPH = {  # memories naming a few entities (the graph reads them as they are written)
    "celery": "The thumbnail worker runs on Celery.",
    "rq": "We replaced Celery with RQ for the thumbnail worker.",
    "redis": "The thumbnail worker depends on Redis.",
    "locks": "Redis holds the locks of the thumbnail worker.",
    "zh": "计费服务依赖 Redis，张伟说预发环境的 Redis 固定在 6.2。",
    "xss": f"Nginx logged {XSS} as a path.",
}
TURN = "RQ retried the thumbnail job after a <b>bold</b> failure."


@pytest.fixture(scope="module")
def graph(ui: UI) -> dict[str, str]:
    """The memories of GRAPH written through the daemon (the first superseded by the
    second) and a turn naming RQ: the memory ids by name."""
    ids = {
        name: ui.call("POST", "/v1/memories", {"text": text, "kind": "fact", "project": PROJECT})[
            "id"
        ]
        for name, text in GRAPH.items()
    }
    assert len(set(ids.values())) == len(GRAPH), ids
    ui.call("POST", f"/v1/memories/{ids['celery']}/supersede", {"new": ids["rq"]})
    turn = {"session": "web-entities", "role": "user", "text": TURN, "project": PROJECT}
    ids["turn"] = ui.call("POST", "/v1/turns", turn)["id"]
    return ids


def go(page: Any, hash_: str) -> None:
    """Open `hash_` in the signed-in page (the hash changes, the page stays)."""
    page.evaluate("(h) => { location.hash = h; }", hash_)


def detail(page: Any, key: str) -> Any:
    """The entity page of `key`, once shown."""
    shown = page.locator(f'[data-test=entity-detail][data-id="{key}"]')
    expect()(shown).to_be_visible()
    return shown


def relation(page: Any, text: str) -> Any:
    return page.locator("[data-test=entity-relation]", has_text=text)


def test_the_list_shows_the_entities_by_project_and_name(
    page: Any, ui: UI, graph: dict[str, str], watch: Watch
) -> None:
    listed = {e["key"]: e for e in ui.call("GET", "/v1/entities?limit=200")}
    assert {"celery", "rq", "redis", "thumbnailworker", "nginx", "张伟", "计费服务"} <= set(listed)
    open_page(page, "entities")
    rows = page.locator("[data-test=entity-row]")
    expect()(rows).to_have_count(len(listed))
    redis = page.locator('[data-test=entity-row][data-id="redis"]')
    expect()(redis).to_contain_text("Redis")
    expect()(redis).to_contain_text("software")
    expect()(redis.locator("[data-test=memory-count]")).to_have_text(
        f"{listed['redis']['memories']} memories"
    )
    assert listed["redis"]["memories"] == 3  # the superseded memory names no entity here
    expect()(page.locator('[data-test=entity-row][data-id="张伟"]')).to_contain_text("1 memory")
    # the most named first, as the API answers
    assert rows.first.get_attribute("data-id") == next(iter(listed))
    screenshot(page, ui.shots, "entities")

    project = page.locator("select[data-test=project]")
    project.select_option("")  # global only: every memory above is the project's
    expect()(redis).to_have_count(0)
    project.select_option(PROJECT)
    expect()(redis).to_be_visible()

    box = page.locator("input[data-test=entity-filter]")
    box.fill("cel")
    expect()(rows).to_have_count(1)
    expect()(rows.first).to_have_attribute("data-id", "celery")
    box.fill("")
    expect()(rows).to_have_count(len(listed))
    assert page.locator("[data-test=error]").inner_text() == ""
    assert watch.problems(page) == []


def test_an_entity_shows_its_relations_memories_and_graph(
    page: Any, ui: UI, graph: dict[str, str], watch: Watch
) -> None:
    open_page(page, "entities")
    page.locator('[data-test=entity-row][data-id="celery"]').click()
    celery = detail(page, "celery")
    assert page.url.endswith("#/entities/Celery")
    expect()(celery.locator("[data-test=entity-title]")).to_have_text("Celery")

    replaced = relation(page, "Celery replaced by RQ")
    expect()(replaced).to_have_attribute("data-past", "false")
    expect()(replaced.locator("a", has_text="RQ")).to_have_attribute("href", "#/entities/RQ")
    expect()(replaced.locator(f'a[href="#/memories/{graph["rq"]}"]')).to_be_visible()
    used = relation(page, "thumbnail worker uses Celery")  # stated by the superseded memory
    expect()(used).to_have_attribute("data-past", "true")
    expect()(used.locator("[data-test=past]")).to_have_text("past")
    expect()(replaced.locator("[data-test=past]")).to_have_count(0)

    memories = page.locator("[data-test=entity-memory]")
    wanted = [m["id"] for m in ui.call("GET", "/v1/entities/celery")["memories"]]
    assert sorted(wanted) == sorted([graph["celery"], graph["rq"]])
    expect()(memories).to_have_count(2)
    assert [memories.nth(i).get_attribute("data-id") for i in range(2)] == wanted  # newest first
    old = page.locator(f'[data-test=entity-memory][data-id="{graph["celery"]}"]')
    new = page.locator(f'[data-test=entity-memory][data-id="{graph["rq"]}"]')
    expect()(old).to_have_attribute("data-past", "true")
    expect()(old.locator("[data-test=past]")).to_have_text("Superseded")
    expect()(new).to_have_attribute("data-past", "false")
    expect()(new.locator("[data-test=past]")).to_have_count(0)
    expect()(new.locator("a.memory-link")).to_have_text(GRAPH["rq"])

    svg = page.locator("svg[data-test=entity-graph]")
    expect()(svg).to_be_visible()
    assert svg.evaluate("(el) => el.namespaceURI") == "http://www.w3.org/2000/svg"
    expect()(svg.locator('[data-test=entity-centre][data-id="celery"]')).to_contain_text("Celery")
    nodes = svg.locator("a[data-test=entity-node]")
    expect()(nodes).to_have_count(2)
    assert {nodes.nth(i).get_attribute("data-id") for i in range(2)} == {"rq", "thumbnailworker"}
    node = svg.locator('a[data-test=entity-node][data-id="thumbnailworker"]')
    expect()(node).to_have_attribute("href", "#/entities/thumbnail%20worker")
    assert svg.locator("[style]").count() == 0 and page.locator("#app [style]").count() == 0
    screenshot(page, ui.shots, "entity")

    new.locator("a.memory-link").click()  # a memory opens in the Memories page
    expect()(page.locator(f'[data-test=memory-detail][data-id="{graph["rq"]}"]')).to_be_visible()
    expect()(page.locator("[data-test=memory-body]")).to_have_text(GRAPH["rq"])
    assert page.locator("[data-test=error]").inner_text() == ""
    assert watch.problems(page) == []


def test_following_neighbours_through_the_graph(
    page: Any, ui: UI, graph: dict[str, str], watch: Watch
) -> None:
    open_page(page, "entities")
    page.locator('[data-test=entity-row][data-id="celery"]').click()
    detail(page, "celery")
    page.locator('a[data-test=entity-node][data-id="rq"] circle').click()
    rq = detail(page, "rq")
    assert page.url.endswith("#/entities/RQ")
    expect()(rq.locator("[data-test=entity-turn]")).to_have_count(1)
    expect()(rq.locator(f'[data-test=entity-turn][data-id="{graph["turn"]}"]')).to_contain_text(
        TURN
    )

    page.locator('a[data-test=entity-node][data-id="thumbnailworker"] circle').click()
    worker = detail(page, "thumbnailworker")
    expect()(relation(page, "thumbnail worker depends on Redis")).to_have_attribute(
        "data-past", "false"
    )
    # Redis shares two memories with it, RQ one: a thicker edge, labelled by the count
    edges = {
        key: worker.locator(f'[data-test=entity-edge][data-id="{key}"]') for key in ("redis", "rq")
    }
    expect()(edges["redis"]).to_have_attribute("data-shared", "2")
    expect()(edges["rq"]).to_have_attribute("data-shared", "1")
    width = {
        key: float(edge.locator("line").get_attribute("stroke-width") or 0)
        for key, edge in edges.items()
    }
    assert width["redis"] > width["rq"] > 0, width
    expect()(edges["redis"].locator("text")).to_have_text("2")

    page.locator('a[data-test=entity-node][data-id="redis"] circle').click()
    detail(page, "redis")
    expect()(relation(page, "Redis pinned to 6.2")).to_be_visible()
    page.go_back()
    detail(page, "thumbnailworker")
    page.locator("a[data-test=entities-back]").click()
    expect()(page.locator('[data-test=entity-row][data-id="redis"]')).to_be_visible()
    assert page.locator("[data-test=error]").inner_text() == ""
    assert watch.problems(page) == []


def test_a_memorys_detail_links_to_its_entities_and_a_chinese_name_opens(
    page: Any, ui: UI, graph: dict[str, str], watch: Watch
) -> None:
    ref = graph["zh"]
    go(page, f"#/memories/{ref}")
    panel = page.locator(f'[data-test=memory-detail][data-id="{ref}"]')
    expect()(panel).to_be_visible()
    links = panel.locator("a[data-test=memory-entity]")
    named = {e["key"] for e in ui.call("GET", f"/v1/entities?ref={ref}")}
    assert {"redis", "张伟", "计费服务"} <= named
    expect()(links).to_have_count(len(named))
    person = panel.locator('a[data-test=memory-entity][data-id="张伟"]')
    expect()(person).to_have_text("张伟")
    expect()(person).to_have_attribute("href", f"#/entities/{quote('张伟', safe='')}")
    person.click()
    detail(page, "张伟")
    assert page.url.endswith("#/entities/%E5%BC%A0%E4%BC%9F")
    expect()(page.locator("[data-test=entity-title]")).to_have_text("张伟")
    expect()(page.locator(f'[data-test=entity-memory][data-id="{ref}"]')).to_contain_text(
        GRAPH["zh"]
    )
    expect()(page.locator('a[data-test=entity-node][data-id="计费服务"]')).to_be_visible()

    go(page, f"#/entities/{quote('计费服务', safe='')}")  # typed into the address bar
    detail(page, "计费服务")
    expect()(relation(page, "计费服务 depends on Redis")).to_be_visible()
    page.reload(wait_until="load")  # the name survives a reload
    detail(page, "计费服务")
    assert page.locator("[data-test=error]").inner_text() == ""
    assert watch.problems(page) == []


def test_an_unknown_name_shows_the_apis_error(
    page: Any, ui: UI, graph: dict[str, str], watch: Watch
) -> None:
    open_page(page, "entities")
    go(page, "#/entities/no-such-service")
    error = page.locator("[data-test=error]")
    expect()(error).to_contain_text("no entity named 'no-such-service'")
    expect()(page.locator("[data-test=entity-missing]")).to_be_visible()
    expect()(page.locator("[data-test=entity-detail]")).to_have_count(0)
    go(page, "#/entities/redis")  # by its key, and the error is gone
    detail(page, "redis")
    expect()(error).to_have_text("")
    # the page's console may log the failed request (404); nothing else went wrong
    assert watch.errors == [] and watch.csp(page) == []
    assert all("404" in line for line in watch.console), watch.console


def test_stored_markup_is_rendered_as_text(
    page: Any, ui: UI, graph: dict[str, str], watch: Watch
) -> None:
    go(page, "#/entities/nginx")
    detail(page, "nginx")
    memory = page.locator(f'[data-test=entity-memory][data-id="{graph["xss"]}"]')
    link = memory.locator("a.memory-link")
    expect()(link).to_have_text(GRAPH["xss"])
    assert XSS in (link.text_content() or "")
    go(page, "#/entities/RQ")
    turn = page.locator(f'[data-test=entity-turn][data-id="{graph["turn"]}"]')
    expect()(turn).to_contain_text("<b>bold</b>")
    go(page, f"#/memories/{graph['xss']}")
    expect()(page.locator("[data-test=memory-body]")).to_have_text(GRAPH["xss"])
    expect()(page.locator('a[data-test=memory-entity][data-id="nginx"]')).to_be_visible()
    assert page.locator("#app img, #app b, #app script").count() == 0
    page.wait_for_timeout(300)  # a dialog would have fired by now
    assert watch.dialogs == []
    assert watch.problems(page) == []


def test_the_entity_page_in_chinese(browser: Any, ui: UI, graph: dict[str, str]) -> None:
    context = browser.new_context(viewport={"width": 1280, "height": 900}, locale="zh-CN")
    context.set_default_timeout(WAIT_MS)
    context.set_default_navigation_timeout(WAIT_MS)
    context.add_init_script(CSP_WATCH)
    try:
        opened = context.new_page()
        watch = Watch()
        watch.attach(opened)
        opened.goto(ui.login_url(), wait_until="load")
        expect()(opened.locator("a[data-nav=entities]")).to_have_text(re.compile("实体"))
        opened.locator("a[data-nav=entities]").click()
        opened.locator('[data-test=entity-row][data-id="celery"]').click()
        detail(opened, "celery")
        expect()(relation(opened, "Celery 被 RQ 取代")).to_have_attribute("data-past", "false")
        past = relation(opened, "thumbnail worker 使用 Celery")
        expect()(past.locator("[data-test=past]")).to_have_text("过去")
        expect()(opened.locator("[data-test=entity-detail] h2").first).to_have_text(
            re.compile("名称")
        )
        assert watch.problems(opened) == []
    finally:
        context.close()
