"""What reaches the files under the data dir: never secrets, nothing purged."""

from pathlib import Path

SECRET = "sk-proj-Zz9Yy8Xx7Ww6Vv5Uu4Tt3Ss2"
PRIVATE = "my-mothers-maiden-name-Quimby"


def data_bytes(home: Path, pattern: str = "*") -> bytes:
    return b"".join(p.read_bytes() for p in sorted(home.rglob(pattern)) if p.is_file())


def test_secrets_and_private_spans_never_reach_disk(engine):
    engine.remember(f"the key is {SECRET} <private>{PRIVATE}</private>", tags=[SECRET])
    engine.ingest("s", "user", f"use {SECRET} and password=Tr0ub4dor&3 <private>{PRIVATE}")
    engine.import_path(
        _write(
            engine.home.parent / "t.jsonl",
            f'{{"session": "s2", "role": "user", "text": "{SECRET}"}}\n',
        )
    )
    raw = data_bytes(engine.home)
    assert raw, "the store wrote nothing"
    for needle in (SECRET, PRIVATE, "Tr0ub4dor", SECRET.lower()):
        assert needle.encode() not in raw
    assert b"REDACTED" in raw  # the redacted text itself was stored


def test_purged_content_leaves_no_trace(engine):
    keep = engine.remember("keep this harmless note about staging")
    gone = engine.remember("Quarterly numbers embargoed until Thursday zebracorn")
    turn = engine.ingest("s", "user", "the codename is zebracorn, 斑马独角兽")
    for _ in range(30):  # enough writes that the index has several segments
        engine.remember(f"filler memory {_} about zebras", project="p")
    raw = data_bytes(engine.home, "mnemoweave.sqlite*")  # not jieba's dictionary cache
    assert b"zebracorn" in raw  # present before the purge: the check below can fail
    engine.purge(gone.id)
    engine.purge(turn.id)
    engine.close()
    raw = data_bytes(engine.home, "mnemoweave.sqlite*")
    for needle in ("zebracorn", "embargoed", "斑马独角兽", "独角兽"):
        assert needle.encode() not in raw, needle
    assert b"harmless note" in raw and keep.id


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path
