"""The web UI in a real Chromium against a real daemon on a seeded data dir (conftest.py):
review in a batch, search in both languages, forget and restore, stored markup shown as
text, the listener's guards, and pages that load without console errors or CSP violations.
The selectors are the ones documented at the top of core/mnemoweave/web/app.js."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import Any

from webui import (
    MEMORIES,
    NAV,
    PAGES,
    PROJECT,
    SEARCHES,
    UI,
    Watch,
    expect,
    open_page,
    over_tcp,
    screenshot,
)

SETTLED_WITHIN = 15.0  # seconds a write may take to show in the store
CLASH = {  # a memory, and a decision that updates it (a card its acceptance clashes with)
    "memory": "The docs site is built with MkDocs 1.4.",
    "turn": "We decided to build the docs site with MkDocs 1.6 instead.",
}


def eventually(check: Callable[[], Any], what: str) -> Any:
    """`check()` once it is truthy (bounded), else fail saying `what`."""
    deadline, last = time.monotonic() + SETTLED_WITHIN, None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(0.1)
    raise AssertionError(f"{what} (within {SETTLED_WITHIN:g}s; last: {last!r})")


def pending_count(page: Any) -> int:
    text = page.locator("[data-test=pending-count]").inner_text()
    found = re.search(r"\d+", text)
    assert found, f"the pending count reads {text!r}"
    return int(found.group())


def search(page: Any, query: str, first: str) -> Any:
    """Search from the memories page, waiting until `first` heads the results; the rows."""
    box = page.locator("input[data-test=search]")
    box.fill(query)
    box.press("Enter")
    rows = page.locator("[data-test=memory-row]")
    expect()(page.locator("[data-test=clear-search]")).to_be_visible()
    expect()(rows.first).to_have_attribute("data-id", first)
    return rows


def open_memory(page: Any, ref: str) -> Any:
    """The detail panel of memory `ref`, opened from the memories list; its body."""
    open_page(page, "memories")
    page.locator(f"[data-test=memory-row][data-id={ref}]").click()
    expect()(page.locator(f"[data-test=memory-detail][data-id={ref}]")).to_be_visible()
    body = page.locator("[data-test=memory-body]")
    body.wait_for(state="visible")
    return body


def status_of(ui: UI, ref: str) -> str:
    return str(ui.call("GET", f"/v1/records/{ref}")["status"])


def test_every_page_has_its_screenshot(page: Any, ui: UI, watch: Watch) -> None:
    for name in PAGES:
        if name == "memory-detail":
            open_memory(page, ui.ids["en"])
        elif name == "entity":
            open_page(page, "entities")
            page.locator("[data-test=entity-row]").first.click()
            page.locator("[data-test=entity-detail]").wait_for(state="visible")
        else:
            open_page(page, name)
        if name == "sessions":
            page.locator("[data-test=session-row]").first.click()
            page.locator("[data-test=turn]").first.wait_for(state="visible")
        if name == "files":
            page.locator("[data-test=export]").click()
            page.locator("a[data-test=export-file]").first.wait_for(state="visible")
        screenshot(page, ui.shots, name)
    assert {p.stem for p in ui.shots.glob("*.png")} >= set(PAGES)
    assert watch.problems(page) == []
    assert page.locator("[data-test=error]").inner_text() == ""


def test_review_accepts_three_cards_in_one_batch(page: Any, ui: UI, watch: Watch) -> None:
    open_page(page, "review")
    before = len(ui.call("GET", "/v1/cards?limit=200"))
    expect()(page.locator("[data-test=pending-count]")).to_have_text(str(before))
    edited, rescoped, plain = ui.ids["cards"][:3]
    rows = {
        ref: page.locator(f"[data-test=card-row][data-id={ref}]")
        for ref in (edited, rescoped, plain)
    }
    summary = "Uploads need an httpx timeout of 10 seconds, or they hang."
    rows[edited].locator("[data-test=edit]").click()
    box = rows[edited].locator("textarea[data-test=edit-text]")
    # the page fills the box with the summary, then focuses it: type once it has focus
    expect()(box).to_be_focused()
    box.fill(summary)
    expect()(box).to_have_value(summary)
    rows[edited].locator("[data-test=save]").click()
    expect()(rows[edited].locator("[data-test=summary]")).to_have_text(summary)
    rows[rescoped].locator("select[data-test=scope]").select_option(value="")
    expect()(rows[rescoped].locator("select[data-test=scope]")).to_have_value("")
    for row in rows.values():
        row.locator("input[data-test=select]").check()
    expect()(page.locator("[data-test=accept-selected]")).to_be_enabled()
    screenshot(page, ui.shots, "review")
    page.locator("[data-test=accept-selected]").click()
    for row in rows.values():
        expect()(row).to_have_count(0)
    expect()(page.locator("[data-test=pending-count]")).to_have_text(str(before - 3))
    assert pending_count(page) == before - 3

    memories = {}
    for ref in rows:

        def accepted(ref: str = ref) -> Any:
            answer = ui.call("GET", f"/v1/records/{ref}")
            return answer["status"] == "accepted" and answer

        card = eventually(accepted, f"{ref} accepted")
        memories[ref] = ui.call("GET", f"/v1/records/{card['memory_id']}")
    assert len({m["id"] for m in memories.values()}) == 3
    assert all(m["status"] == "active" for m in memories.values())
    assert memories[edited]["body"] == summary
    assert memories[rescoped]["project"] == ""
    assert memories[plain]["project"] == PROJECT and memories[edited]["project"] == PROJECT
    assert len(ui.call("GET", "/v1/cards?limit=200")) == before - 3
    assert page.locator("[data-test=error]").inner_text() == ""
    assert watch.problems(page) == [] and watch.dialogs == []


def test_search_finds_the_right_memory_first_in_chinese_and_english(
    page: Any, ui: UI, watch: Watch
) -> None:
    open_page(page, "memories")
    rows = search(page, SEARCHES["zh"], first=ui.ids["zh"])
    expect()(rows.first).to_contain_text(MEMORIES["zh"][:12])
    rows = search(page, SEARCHES["en"], first=ui.ids["en"])
    expect()(rows.first).to_contain_text("staging database password")
    screenshot(page, ui.shots, "memories")
    assert watch.problems(page) == []


def test_a_team_memory_is_found_with_its_authors_and_opens_nothing(
    page: Any, ui: UI, watch: Watch
) -> None:
    open_page(page, "memories")
    page.locator("select[data-test=source]").select_option("team")
    rows = search(page, "billing export nightly", first="team:000000000000")
    expect()(rows.first).to_contain_text("reports replica")
    expect()(rows.first).to_contain_text("shared by alice@acme.dev")
    rows.first.click()
    page.wait_for_timeout(300)
    assert page.locator("[data-test=memory-detail]").count() == 0
    assert page.locator("[data-test=error]").inner_text() == ""
    assert watch.problems(page) == []


def test_forget_then_restore(page: Any, ui: UI, watch: Watch) -> None:
    ref = ui.ids["forget"]
    body = open_memory(page, ref)
    expect()(body).to_have_text(MEMORIES["forget"])
    page.locator("[data-test=forget]").click()
    eventually(lambda: status_of(ui, ref) == "trashed", f"{ref} trashed")
    page.locator("[data-test=restore]").click()
    eventually(lambda: status_of(ui, ref) == "active", f"{ref} active again")
    expect()(page.locator("[data-test=forget]")).to_be_visible()
    screenshot(page, ui.shots, "memory-detail")
    assert page.locator("[data-test=error]").inner_text() == ""
    assert watch.problems(page) == []


def test_stored_markup_is_shown_as_text(page: Any, ui: UI, watch: Watch) -> None:
    ref = ui.ids["xss"]
    open_page(page, "memories")
    row = page.locator(f"[data-test=memory-row][data-id={ref}]")
    expect()(row).to_contain_text(MEMORIES["xss"])
    body = open_memory(page, ref)
    expect()(body).to_have_text(MEMORIES["xss"])
    assert body.text_content() == MEMORIES["xss"]
    assert page.locator("#app script").count() == 0
    page.wait_for_timeout(300)  # a dialog would have fired by now
    assert watch.dialogs == []
    assert watch.problems(page) == []


def test_the_listener_refuses_no_token_a_foreign_host_and_a_foreign_origin(
    page: Any, ui: UI
) -> None:
    token = page.evaluate("() => localStorage.getItem('mnemoweave.token')")
    assert token == ui.token()
    good = {"Host": f"127.0.0.1:{ui.port}", "Authorization": f"Bearer {token}"}
    assert over_tcp(ui.port, "GET", "/v1/status", **good)[0] == 200
    status, answer = over_tcp(ui.port, "GET", "/v1/status", Host=good["Host"])
    assert status == 401 and set(answer) == {"error"}, answer
    status, answer = over_tcp(ui.port, "GET", "/v1/status", **good | {"Host": "evil.example"})
    assert status == 403 and set(answer) == {"error"}, answer
    body = {"query": "staging", "k": 5, "source": "memories", "mode": "hybrid"}
    json_post = good | {"Content-Type": "application/json"}
    assert over_tcp(ui.port, "POST", "/v1/search", body, **json_post)[0] == 200
    status, answer = over_tcp(
        ui.port, "POST", "/v1/search", body, **json_post | {"Origin": "http://evil.example"}
    )
    assert status == 403 and set(answer) == {"error"}, answer


def test_pages_load_without_console_errors_or_csp_violations(
    page: Any, ui: UI, watch: Watch
) -> None:
    assert "#login=" not in page.url
    for name in NAV:
        open_page(page, name)
    open_memory(page, ui.ids["zh"])
    page.reload(wait_until="load")  # signed in by the stored token, no code in the URL
    expect()(page.locator("[data-test=memory-body]")).to_have_text(MEMORIES["zh"])
    assert watch.problems(page) == []
    assert watch.dialogs == []


def test_a_card_that_clashes_is_held_beside_the_memory_and_replaces_it(
    page: Any, ui: UI, watch: Watch
) -> None:
    old = ui.call("POST", "/v1/memories", {"text": CLASH["memory"], "project": PROJECT})["id"]
    ui.call(
        "POST",
        "/v1/turns",
        {"session": "web-clash", "role": "user", "text": CLASH["turn"], "project": PROJECT},
    )
    (card,) = [c["id"] for c in ui.call("POST", "/v1/distill", {"session": "web-clash"})]
    open_page(page, "review")
    row = page.locator(f"[data-test=card-row][data-id={card}]")
    row.locator("[data-test=accept]").click()
    clash = row.locator(f"[data-test=clash][data-id={old}]")
    expect()(clash).to_contain_text(CLASH["memory"])  # held: both texts side by side
    assert ui.call("GET", f"/v1/records/{card}")["status"] == "pending"
    clash.locator("[data-test=replace]").click()
    expect()(row).to_have_count(0)
    accepted = eventually(
        lambda: (c := ui.call("GET", f"/v1/records/{card}"))["status"] == "accepted" and c,
        f"{card} accepted",
    )
    retired = ui.call("GET", f"/v1/records/{old}")
    assert (retired["status"], retired["superseded_by"]) == ("superseded", accepted["memory_id"])


def test_a_memory_is_added_from_the_page_and_a_bad_one_loses_nothing(
    page: Any, ui: UI, watch: Watch
) -> None:
    open_page(page, "memories")
    page.locator("[data-test=add-memory]").click()
    form = page.locator("[data-test=add-form]")
    form.locator("[data-test=add-kind]").select_option("pref")
    form.locator("[data-test=add-project]").select_option(PROJECT)
    form.locator("[data-test=add-tags]").fill("style, 注释")
    text = form.locator("[data-test=add-text]")
    text.fill("   ")  # nothing to remember: the API's error, and the form stays as it was
    form.locator("[data-test=add-save]").click()
    expect()(page.locator("[data-test=error]")).to_have_text(
        "nothing to remember: the text is empty"
    )
    expect()(form.locator("[data-test=add-tags]")).to_have_value("style, 注释")
    text.fill("以后提交信息都用英文写")
    text.press("Control+Enter")
    detail = page.locator("[data-test=memory-detail]")
    expect()(detail.locator("[data-test=memory-body]")).to_have_text("以后提交信息都用英文写")
    ref = detail.get_attribute("data-id")
    assert ref and ref.startswith("m_")
    stored = ui.call("GET", f"/v1/records/{ref}")
    assert (stored["kind"], stored["project"], stored["tags"]) == (
        "pref",
        PROJECT,
        ["style", "注释"],
    )
    expect()(page.locator("[data-test=notice]")).to_contain_text(f"new {ref}")
    assert page.locator("[data-test=add-form]").count() == 0
    refused = "Failed to load resource: the server responded with a status of 400 (Bad Request)"
    assert watch.problems(page) == [refused]  # the empty text, and nothing else


def test_a_corrected_memory_is_listed_after_its_correction_as_earlier(
    page: Any, ui: UI, watch: Watch
) -> None:
    old = ui.call("POST", "/v1/memories", {"text": "The CDN cache TTL is 60 seconds"})["id"]
    new = ui.call("POST", "/v1/memories", {"text": "The CDN cache TTL is 300 seconds"})
    assert new["reason"].startswith(f"conflicts with {old}")
    open_page(page, "memories")
    rows = search(page, "CDN cache TTL", new["id"])
    expect()(rows.nth(1)).to_have_attribute("data-id", old)
    expect()(rows.nth(1).locator("[data-test=earlier]")).to_contain_text("earlier · 20")
    assert rows.first.locator("[data-test=earlier]").count() == 0
    assert watch.problems(page) == []
