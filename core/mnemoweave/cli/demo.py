"""`mnemoweave demo`: the main job on a small bilingual sample, in a throw-away store."""

from __future__ import annotations

import shutil
from collections.abc import Callable

from mnemoweave.config import data_dir
from mnemoweave.engine import Engine
from mnemoweave.model import Turn

SAMPLE = [
    ("pref", "以后代码注释都用英文，提交信息也用英文。", "", ("style",)),
    ("conclusion", "httpx 的超时设置为 10 秒后，上传卡住的问题解决了。", "uploader", ()),
    ("pref", "Use tabs, not spaces, in the Makefile and keep lines under 100 columns.", "", ()),
    (
        "conclusion",
        "The flaky CI job was a race in the fixture; pinning pytest-xdist fixed it.",
        "uploader",
        ("ci",),
    ),
    (
        "fact",
        "Staging deploys go through `make deploy ENV=staging`; prod needs a tag.",
        "uploader",
        (),
    ),
]
TURNS = [
    ("user", "上传大文件的时候一直卡住，帮我看看"),
    ("assistant", "卡在 httpx 默认没有超时；我把 timeout 设成了 10 秒。"),
    ("user", "My API key is sk-demo0123456789abcdefghij, keep it out of memory please."),
]
QUERIES = [
    ("注释", None),
    ("超时", "uploader"),
    ("why was CI flaky", "uploader"),
    ("what language should code comments be written in", None),
]


def run(echo: Callable[[str], None]) -> None:
    home = data_dir() / "demo"
    shutil.rmtree(home, ignore_errors=True)
    with Engine(home=home) as engine:
        echo(f"demo store: {home}")
        echo(f"retrieval: {engine.retrieval_mode()}\n")
        for kind, text, project, tags in SAMPLE:
            result = engine.remember(text, kind=kind, project=project, tags=tags)
            echo(f"remember  {result.id} [{kind}] {text}")
        again = engine.remember(SAMPLE[0][1].replace("，", "， "), kind="pref")
        echo(f"remember  the first one again -> {again.action} {again.id}")
        for role, text in TURNS:
            result = engine.ingest("demo-session", role, text, host="demo", project="uploader")
            turn = engine.get(result.id) if result.id else None
            assert isinstance(turn, Turn), result  # the sample turns are all stored as turns
            echo(f"ingest    {result.id} {role}: {turn.text}")
        echo("")
        for query, where in QUERIES:
            hits = engine.search(query, k=2, project=where)
            scope = f" (project {where} + global)" if where else ""
            echo(f"search {query!r}{scope}:")
            for hit in hits:
                echo(f"    {hit.id} {hit.score:5.2f} {hit.text}")
        forgotten = engine.forget("m_3")
        found = len(engine.search("tabs", mode="lexical"))
        echo(f"\nforget m_3 -> {forgotten.action}; search 'tabs' now finds {found} hit(s)")
        engine.restore("m_3")
        found = len(engine.search("tabs", mode="lexical"))
        echo(f"restore m_3 -> search 'tabs' finds {found} hit(s)")
        echo("\nweave for the prompt '给上传模块加上注释' in project uploader:")
        echo(engine.weave("给上传模块加上注释", session="demo-session", project="uploader").text)
        echo("\n" + ", ".join(f"{n} {name}" for name, n in engine.status()["counts"].items()))
