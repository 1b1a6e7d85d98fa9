"""Needle tags: a bracketed word opening a memory ("[坑] ...") stays in its text and is a
tag too, counted by `status --by tag`, selected by `forget --tag`, and explained when it
is given as an id."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from mnemoweave.errors import InvalidInput
from mnemoweave.model import needle_tags
from mnemoweave.store import migrations
from mnemoweave.store.db import connect
from mnemoweave.upkeep.bulk import chosen


@pytest.mark.parametrize(
    ("text", "tags"),
    [
        ("[坑] C2C 内联键盘最多 5 行，超出发送必失败", ("[坑]",)),
        ("  [pitfall][决策] never retry a MinIO 403", ("[pitfall]", "[决策]")),
        ("[pitfall] [decision] two, spaced", ("[pitfall]", "[decision]")),
        ("[twelve_chars] ok", ("[twelve_chars]",)),
        ("[thirteen_char] too long", ()),
        ("[two words] no", ()),
        ("[link](https://example.com) is a link", ()),
        ("a [坑] inside the text is not one", ()),
        ("[] empty", ()),
    ],
)
def test_what_a_needle_tag_is(text, tags):
    assert needle_tags(text) == tags


def test_a_needle_tag_is_kept_in_the_text_and_is_a_tag(engine):
    made = engine.remember("[坑] C2C 内联键盘最多 5 行，超出发送必失败", tags=["telegram"])
    other = engine.remember("[决策] 上传改用 httpx")
    memory = engine.get(made.id)
    assert memory.body.startswith("[坑] C2C") and memory.tags == ("telegram", "[坑]")
    assert engine.status()["memories_by_tag"] == {"telegram": 1, "[坑]": 1, "[决策]": 1}
    assert [m.id for m in chosen(engine, tag="[坑]")] == [made.id]
    assert [m.id for m in chosen(engine, tag="坑")] == [made.id]  # without its brackets too
    assert [m.id for m in chosen(engine, tag="[决策]")] == [other.id]


def test_a_needle_tag_given_as_an_id_says_how_to_select_by_it(engine):
    engine.remember("[坑] never retry a MinIO 403")
    with pytest.raises(InvalidInput) as refused:
        engine.forget("[坑]")
    assert str(refused.value) == (
        "[坑] is a tag, not an id: select by it with `forget --tag '[坑]'` (MCP: tag), "
        "which lists the memories first"
    )
    with pytest.raises(InvalidInput, match="not a valid id: 'banana'"):
        engine.forget("banana")


def test_the_cli_counts_and_forgets_by_a_needle_tag(engine):
    engine.remember("[坑] C2C 内联键盘最多 5 行，超出发送必失败")
    engine.remember("Deploys go out on Tuesdays")
    engine.close()

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "mnemoweave", *args],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip

    assert "[坑] 1" in cli("status", "--by", "tag").stdout
    refused = cli("forget", "[坑]")
    assert refused.returncode == 2 and "forget --tag '[坑]'" in refused.stderr
    shown = cli("forget", "--tag", "[坑]")
    assert "C2C" in shown.stdout and "would go to the trash" in shown.stdout
    assert "trashed 1 memory" in cli("forget", "--tag", "[坑]", "--yes").stdout
    listed = json.loads(cli("list", "--json").stdout)["memories"]
    assert [m["body"] for m in listed] == ["Deploys go out on Tuesdays"]


def test_memories_stored_before_get_their_needle_tags(tmp_path, monkeypatch):
    path = tmp_path / "s.sqlite"
    before = migrations.MIGRATIONS[: migrations.MIGRATIONS.index(migrations.m018_needle_tags)]
    with monkeypatch.context() as patch:
        patch.setattr(migrations, "MIGRATIONS", before)
        db = connect(path)
    db.execute(
        "INSERT INTO memories (kind, body, norm, tags, created, updated)"
        " VALUES ('fact', '[坑] 超出发送必失败', 'x', '[\"tg\"]', 0, 0),"
        " ('fact', 'plain text', 'y', '[]', 0, 0)"
    )
    db.close()
    db = connect(path)
    tags = [json.loads(r[0]) for r in db.execute("SELECT tags FROM memories ORDER BY id")]
    assert tags == [["tg", "[坑]"], []]


def test_full_width_brackets_and_an_edit_that_adds_a_needle(engine):
    made = engine.remember("【坑】 不要在循环里 await 上传")
    assert engine.get(made.id).tags == ("【坑】",)
    assert [m.id for m in chosen(engine, tag="坑")] == [made.id]
    plain = engine.remember("Deploys go out on Tuesdays")
    engine.edit(plain.id, text="[决策] Deploys go out on Tuesdays")
    assert engine.get(plain.id).tags == ("[决策]",)
    assert engine.status()["memories_by_tag"]["[决策]"] == 1
