"""A correction wins: a memory stored against an active one on the same subject ranks
above it in search and the weave, the older is shown as earlier with its date, and after
`supersede` the older never appears."""

from __future__ import annotations

import subprocess
import sys

import pytest

from mnemoweave.model import Hit, iso
from mnemoweave.recall.corrections import newest_first
from mnemoweave.store import memories as memories_table
from mnemoweave.store.db import transaction


def _ids(hits: list[Hit]) -> list[str]:
    return [hit.id for hit in hits]


@pytest.mark.parametrize(
    ("old", "new", "query"),
    [
        ("The upload timeout is 90 seconds", "The upload timeout is 150 seconds", "upload timeout"),
        ("上传超时是 90 秒", "上传超时改成 150 秒", "上传超时"),
        ("We deploy with Ansible", "We no longer deploy with Ansible, now we use Nomad", "deploy"),
    ],
)
def test_the_newer_memory_ranks_first_and_the_older_is_marked_earlier(engine, old, new, query):
    first = engine.remember(old)
    second = engine.remember(new)
    assert f"`mnemoweave supersede {first.id} {second.id}` retires {first.id}" in second.reason
    hits = engine.search(query)
    assert _ids(hits)[:2] == [second.id, first.id]
    date = (iso(engine.get(first.id).created) or "")[:10]
    assert hits[1].extra["earlier"] == {"by": second.id, "date": date}
    assert "earlier" not in hits[0].extra
    woven = engine.weave(query).text
    assert woven.index(f"({second.id}, now)") < woven.index(f"({first.id}, now)")
    assert f'[fact · earlier · {date}] "{old}"' in woven
    engine.supersede(first.id, second.id)
    assert first.id not in _ids(engine.search(query))
    assert f"({first.id}," not in engine.weave(query).text


def test_memories_on_other_subjects_are_not_marked(engine):
    engine.remember("The upload timeout is 90 seconds")
    other = engine.remember("The login page times out after 10 minutes")
    assert other.reason == ""
    assert all("earlier" not in hit.extra for hit in engine.search("timeout"))


def test_an_earlier_memory_is_no_longer_marked_once_its_correction_is_trashed(engine):
    first = engine.remember("The upload timeout is 90 seconds")
    second = engine.remember("The upload timeout is 150 seconds")
    engine.forget(second.id)
    (hit,) = engine.search("upload timeout")
    assert hit.id == first.id and "earlier" not in hit.extra


def _hit(ref: str) -> Hit:
    return Hit(ref, "fact", ref, 1.0, "", 0.0, {})


def test_a_chain_of_corrections_is_listed_newest_first(engine):
    for text in ["Deploys go out on Tuesdays", "The staging database is read-only",
                 "Code comments stay in English", "The frontend uses pnpm"]:  # fmt: skip
        assert engine.remember(text).reason == ""
    with transaction(engine.db) as db:  # m_3 corrects m_2, which corrects m_1
        memories_table.corrected(db, [1], 2)
        memories_table.corrected(db, [2], 3)
    hits = newest_first(engine.db, [_hit("m_1"), _hit("m_4"), _hit("m_2"), _hit("m_3")])
    assert _ids(hits) == ["m_4", "m_3", "m_2", "m_1"]
    assert [hit.extra.get("earlier", {}).get("by") for hit in hits] == [None, None, "m_3", "m_2"]


def test_the_cli_says_so_and_lists_the_correction_first(engine):
    engine.close()

    def cli(*args: str) -> str:
        done = subprocess.run(
            [sys.executable, "-m", "mnemoweave", *args],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        return done.stdout

    cli("remember", "The upload timeout is 90 seconds")
    said = cli("remember", "The upload timeout is 150 seconds")
    assert said.startswith("new m_2 (conflicts with m_1") and "mnemoweave supersede m_1 m_2" in said
    first, second = cli("search", "upload timeout").splitlines()
    assert first.startswith("m_2 ") and "150 seconds" in first
    assert second.startswith("m_1 ") and "[fact · earlier · " in second


def test_the_brief_holds_what_is_in_force_only(engine):
    old = engine.remember("Uploads use a 90 second timeout", kind="conclusion", project="/repo")
    new = engine.remember("Uploads use a 150 second timeout", kind="conclusion", project="/repo")
    assert new.reason
    brief = engine.weave("", session="s1", project="/repo").text
    assert f"({new.id}," in brief and f"({old.id}," not in brief
