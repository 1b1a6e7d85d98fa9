"""The web page's guards, without a daemon: one-time codes, the page's files, writes."""

from __future__ import annotations

import re
from pathlib import Path

from mnemoweave.daemon import web


def test_a_code_works_once_and_not_after_it_expires():
    now = [100.0]
    logins = web.Logins(clock=lambda: now[0])
    first, second = logins.mint(), logins.mint()
    assert first != second and len(first) >= 32
    assert logins.redeem(first) and not logins.redeem(first)
    now[0] += web.LOGIN_SECONDS + 1
    assert not logins.redeem(second)
    assert not logins.redeem("")


def test_only_the_pages_own_files_are_served():
    status, headers, body = web.page_file("/ui/")
    assert status == 200 and headers["Content-Type"].startswith("text/html")
    assert web.page_file("/ui/app.css")[1]["Content-Type"].startswith("text/css")
    assert web.page_file("/")[:2] == (302, {"Location": "/ui/"})
    for path in ("/ui/../web.py", "/ui/vendor/../../tcp.py", "/ui/.x.js", "/ui/a//b.js"):
        assert web.page_file(path)[0] == 404, path
    assert web.is_page("GET", "/ui/app.js") and not web.is_page("POST", "/ui/app.js")
    assert not web.is_page("GET", "/v1/status")


def test_a_write_must_be_json_from_the_listeners_own_origin():
    json_type = {"Content-Type": "application/json; charset=utf-8"}
    assert web.write_refusal("GET", {}, 8000) is None
    assert web.write_refusal("POST", json_type, 8000) is None  # a CLI sends no Origin
    own = json_type | {"Origin": "http://localhost:8000"}
    assert web.write_refusal("POST", own, 8000) is None
    assert web.write_refusal("POST", json_type | {"Origin": "http://127.0.0.1:9"}, 8000)[0] == 403
    assert web.write_refusal("DELETE", {"Content-Type": "text/plain"}, 8000)[0] == 415
    assert web.write_refusal("POST", {}, 8000)[0] == 415


def test_every_label_of_the_page_exists_in_english_and_chinese():
    page = Path(web.__file__).parents[1] / "web"
    script = (page / "labels.js").read_text(encoding="utf-8")
    labels = script[script.index("const LABELS = {") : script.index("\n};\n")]
    english, chinese = labels.split("\n  zh: {")
    keys = [set(re.findall(r"^    (\w+):", part, re.M)) for part in (english, chinese)]
    assert len(keys[0]) > 100 and keys[0] == keys[1], keys[0] ^ keys[1]
    modules = [path.read_text(encoding="utf-8") for path in page.glob("*.js")]
    used = {key for text in modules for key in re.findall(r'\bt\("(\w+)"', text)}
    assert used <= keys[0], used - keys[0]
