"""jieba's dictionary read from its SQLite table: the same segmentation as jieba's own."""

import json
import os
import sqlite3
import subprocess
import sys

import jieba
import pytest

from mnemoweave.store import dictionary

TEXTS = [
    "合并前必须跑检查",
    "以后代码注释都用英文",
    "踩坑记录：RQ 的 worker 在 macOS 上 fork 会崩，"
    "需要设置 OBJC_DISABLE_INITIALIZE_FORK_SAFETY=YES 才行",
    "我们决定用 httpx，超时设成 10 秒，因为上传经常卡住。",
    "中华人民共和国国务院总理在北京人民大会堂举行记者会",
    "Deploy with make deploy, never push to main",
]


@pytest.fixture(scope="module")
def own(tmp_path_factory):
    """jieba with its own dictionary, loaded whole (its cache in a temporary dir)."""
    tokenizer = jieba.Tokenizer()
    tokenizer.tmp_dir = str(tmp_path_factory.mktemp("jieba"))
    tokenizer.initialize()
    return tokenizer


def cut(tokenizer, texts):
    return [list(tokenizer.cut_for_search(text)) for text in texts]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """A cache dir whose table is built already: tokenizers opened on it read entries."""
    cache = tmp_path_factory.mktemp("cache")
    dictionary.tokenizer(cache)
    return cache


def test_a_table_just_built_is_not_read_back(tmp_path, own):
    table = dictionary.tokenizer(tmp_path)
    assert table.FREQ._all is not None and len(table.FREQ._all) == len(own.FREQ)
    assert cut(table, TEXTS) == cut(own, TEXTS)


def test_words_read_as_needed_segment_as_jiebas_own_dictionary(built, own):
    table = dictionary.tokenizer(built)
    assert table.FREQ.total == own.total
    assert cut(table, TEXTS) == cut(own, TEXTS)
    assert cut(table, ["".join(TEXTS) * 3]) == cut(own, ["".join(TEXTS) * 3])
    assert table.FREQ._all is None  # a few texts read a few entries, not the table


def test_a_process_that_reads_many_words_reads_the_table_once(built, own, monkeypatch):
    monkeypatch.setattr(dictionary, "READ_ALL_AFTER", 20)
    table = dictionary.tokenizer(built)
    assert table.FREQ._all is None
    assert cut(table, TEXTS) == cut(own, TEXTS)
    assert table.FREQ._all is not None and len(table.FREQ._all) > 100_000
    assert "中华人民共和国" in table.FREQ and "中华人民共和" in table.FREQ  # a word, a prefix
    assert "不是一个词语吧" not in table.FREQ and table.FREQ.get("不是一个词语吧", 1) == 1


def test_the_whole_table_read_at_once_segments_the_same(built, own):
    table = dictionary.tokenizer(built)
    assert table.FREQ._all is None
    assert len(table.FREQ.read_all()) == len(own.FREQ)
    assert cut(table, TEXTS) == cut(own, TEXTS)


def test_the_table_is_built_again_from_another_dictionary_or_when_damaged(tmp_path):
    (tmp_path / "jieba.cache").write_bytes(b"what jieba cached for an older version")
    dictionary.tokenizer(tmp_path)
    path = tmp_path / dictionary.FILE
    assert path.is_file() and not (tmp_path / "jieba.cache").exists()
    with sqlite3.connect(path) as db:
        db.execute("UPDATE source SET stamp = 'another dictionary'")
    assert list(dictionary.tokenizer(tmp_path).cut_for_search("合并前必须跑检查"))
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT stamp FROM source").fetchone()[0] != "another dictionary"
    path.write_bytes(b"not a database")
    assert "检查" in dictionary.tokenizer(tmp_path).cut_for_search("合并前必须跑检查")
    assert [p.name for p in tmp_path.iterdir()] == [dictionary.FILE]  # no staging left


def test_jieba_is_imported_without_pkg_resources_and_segments_the_same(tmp_path, own):
    """jieba falls back to open() for its data files (HMM tables included) when
    pkg_resources cannot be imported: a fresh process segments as jieba always does."""
    code = (
        "import json, sys; from mnemoweave import text; "
        "cuts = [list(text._tokenizer().cut_for_search(t)) for t in json.load(sys.stdin)]; "
        "print(json.dumps([cuts, 'pkg_resources' in sys.modules]))"
    )
    env = {**os.environ, "MNEMOWEAVE_HOME": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-c", code],
        input=json.dumps(TEXTS),
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    cuts, imported = json.loads(done.stdout)
    assert cuts == cut(own, TEXTS) and not imported


def test_the_daemon_reads_the_whole_dictionary_while_it_warms_up(engine, monkeypatch):
    from mnemoweave import text
    from mnemoweave.daemon.warming import warm

    dictionary.tokenizer(text.cache_dir())  # the data dir's table exists: opened, not built
    monkeypatch.setattr(text, "_jieba", None)  # this process's jieba, set up afresh
    warm(engine)
    assert text._tokenizer().FREQ._all is not None
