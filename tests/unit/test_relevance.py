"""The relevance gate's signals: word information from outside the store, so that a store
of one memory and a store of thousands judge a prompt alike (relevance.py, wordinfo.py)."""

from pathlib import Path

import pytest

from mnemoweave.config import shared_cache
from mnemoweave.embed import use_m3
from mnemoweave.recall import wordinfo
from mnemoweave.recall.relevance import Gate, prompt_words
from mnemoweave.recall.retrieve import DenseChannel
from mnemoweave.text import translations


def test_rare_words_say_more_than_common_ones_in_both_languages():
    info = wordinfo.information
    assert info("the") < info("window") < info("deploy") < info("presigned")
    assert info("的") < info("部署") < info("重试")
    assert info("httpx") > info("client")  # an identifier needs pieces: it says a lot
    assert wordinfo.information("zzqxj") > 20  # unknown to every piece table


def test_the_piece_table_is_kept_once_for_every_data_dir(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setattr(wordinfo, "_pieces", None)  # a new process
    older = wordinfo.cache_dir() / wordinfo.CACHE  # where an older version kept its copy
    older.parent.mkdir(parents=True)
    older.write_text("{}")
    built = wordinfo.piece_table()
    assert (shared_cache() / wordinfo.CACHE).is_file() and not older.exists()

    def unread(path: Path) -> None:
        raise AssertionError(f"{path} read again")

    monkeypatch.setattr(use_m3, "read_sp_model", unread)
    monkeypatch.setattr(wordinfo, "_pieces", None)
    monkeypatch.setenv("MNEMOWEAVE_HOME", str(tmp_path / "another-data-dir"))
    kept = wordinfo.piece_table()
    assert kept.keys() == built.keys()
    assert all(abs(kept[piece] - cost) < 0.001 for piece, cost in built.items())


def test_prompt_words_are_whole_words_once_with_their_translations():
    words = {w.term: w for w in prompt_words("今天天气怎么样？Deploy window, deploys")}
    assert set(words) == {"今天天气", "deploy", "window"}
    assert words["今天天气"].pieces  # a text holding 天气 holds part of it
    assert "部署" in words["deploy"].translations and "deploy" in translations("部署")


def test_the_gate_judges_a_memory_the_same_in_a_young_store_and_a_large_one(engine):
    text = "The team's deploy window is Friday 18:00, never on Mondays."
    young = Gate(engine, "When is our deploy window")
    first = young.signals(text, {})
    for number in range(200):
        engine.remember(f"Deploy note {number}: service s{number} deploys on demand", project="p")
    again = Gate(engine, "When is our deploy window").signals(text, {})
    assert first == again and first.coverage == 1.0 and first.key == 1.0
    assert young.score(first) >= engine.config.memory_gate
    chinese = Gate(engine, "我们的部署窗口是什么时候？").signals(text, {"same_language": 0.0})
    assert chinese.coverage == 1.0 and not chinese.same_language  # through the glossary


def test_a_long_text_holds_the_prompts_words_only_within_a_window() -> None:
    from mnemoweave.recall.relevance import Gate as G

    class Bare:
        channels: list[DenseChannel] = []

    gate = G(Bare(), "upload timeout retry")  # type: ignore[arg-type]  # a stand-in, on purpose
    near = "Uploads hung. We set a timeout and a retry on the upload client."
    far = (
        "Uploads are big. "
        + "Nothing else here. " * 5
        + "A timeout was set. "
        + "More. " * 5
        + "One retry."
    )
    assert gate.coverage(near) == 1.0
    assert gate.coverage(far) < 1.0


def test_a_glossary_equivalent_counts_as_a_word_not_as_part_of_a_name() -> None:
    class Bare:
        channels: list[DenseChannel] = []

    gate = Gate(Bare(), "查找")  # type: ignore[arg-type]  # a stand-in, on purpose
    assert gate.coverage("Full-text search over the docs.") == 1.0
    assert gate.coverage("nimbus-search deploys on Fridays.") == 0.0  # a service's name
    own = Gate(Bare(), "search")  # type: ignore[arg-type]  # a stand-in, on purpose
    assert own.coverage("nimbus-search deploys.") == 1.0  # the prompt's own word, in a name
