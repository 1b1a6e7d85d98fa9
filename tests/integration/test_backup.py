"""Encrypted backup and restore (mnemoweave.upkeep.backup, `mnemoweave backup` / `restore FILE.age`)
on real SQLite, ChromaDB (with the session's built models), pyrage and Debian's `age` CLI.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import sqlite3
import stat
import subprocess
import sys
import tarfile
import threading
from pathlib import Path
from typing import Any

import pyrage
import pytest
from click.testing import CliRunner

from mnemoweave.cli.main import cli
from mnemoweave.errors import InvalidInput
from mnemoweave.hosts import client
from mnemoweave.upkeep.backup import TMP_NAME, backup, restore

# running.py sits in tests/daemon, which pytest puts on sys.path only for its own tests
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "daemon"))

from running import make_home, start_daemon  # noqa: E402

AGE = shutil.which("age")
AGE_KEYGEN = shutil.which("age-keygen")
WITHIN = 60  # seconds for one `age` command
MARKER = "canary-quokka-4417-backup-leak"  # unique; stored in a memory, searched for in files
# derived from SQLite, rebuilt by restore: compared through search results instead
REBUILT = ("_fts", "_vocab")
GRAPH = ("entities", "mentions", "relations", "graphed")  # read again: compared as shown


@pytest.fixture
def keys(tmp_path: Path) -> tuple[Path, str]:
    """An identity file written by the real `age-keygen`, and its public key."""
    assert AGE and AGE_KEYGEN, "these tests need Debian's age: apt-get install -y age"
    keyfile = tmp_path / "keys" / "key.txt"
    keyfile.parent.mkdir()
    subprocess.run(
        [AGE_KEYGEN, "-o", str(keyfile)], check=True, timeout=WITHIN, capture_output=True
    )
    public = subprocess.run(
        [AGE_KEYGEN, "-y", str(keyfile)], check=True, timeout=WITHIN, capture_output=True, text=True
    ).stdout.strip()
    return keyfile, public


def fill(engine) -> dict[str, str]:
    """Memories (en, zh, one holding MARKER), turns, cards, trash and feedback: audit rows."""
    ids = {
        "en": engine.remember("Retry flaky uploads with exponential backoff", project="up").id,
        "zh": engine.remember("以后代码注释都用英文，提交信息也用英文", kind="pref").id,
        "marker": engine.remember(f"The staging vault note is {MARKER}", project="up").id,
        "gone": engine.remember("Use tabs for indentation in the Makefile", project="up").id,
    }
    assert MARKER in engine.get(ids["marker"]).body  # stored as written, not redacted
    for n, text in enumerate(
        [
            "I always want type hints on public functions.",
            "We decided to pin httpx below 1.0 because of the timeout change.",
            "以后所有接口都要返回 JSON 错误信息。",
        ]
    ):
        engine.ingest("s1", "user", text, project="up", ts=1.7e9 + n)
    assert engine.distill(), "the turns gave no card to back up"
    engine.forget(ids["gone"])
    engine.feedback(ids["en"], "useful")
    return ids


def tables(path: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table the store keeps (not the derived full-text tables and
    the graph, whose ids a rebuild renews)."""
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        names = [row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        found = {
            name: sorted(db.execute(f'SELECT * FROM "{name}"').fetchall(), key=repr)
            for name in names
            if not any(part in name for part in REBUILT) and name not in GRAPH
        }
        found["sqlite_sequence"] = [r for r in found["sqlite_sequence"] if r[0] not in GRAPH]
        return found
    finally:
        db.close()


def searches(engine, mode: str) -> list[list[tuple[str, str, float]]]:
    queries = [("uploads backoff", "up"), ("代码注释", None), ("staging vault", "up")]
    return [
        [
            (hit.id, hit.text, round(hit.score, 4))
            for hit in engine.search(q, project=p, mode=mode, touch=False, source="all")
        ]
        for q, p in queries
    ]


def files_holding(root: Path, needle: bytes) -> set[str]:
    """The files under `root` whose bytes hold `needle` (relative paths)."""
    found = set()
    for folder, _, names in os.walk(root):
        for name in names:
            path = Path(folder, name)
            if path.is_file() and needle in path.read_bytes():
                found.add(str(path.relative_to(root)))
    return found


def members(archive: Path, keyfile: Path) -> dict[str, bytes]:
    """What the standard `age` CLI decrypts the backup to: the tar's members."""
    done = subprocess.run(
        [AGE or "age", "-d", "-i", str(keyfile), str(archive)],
        capture_output=True,
        timeout=WITHIN,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    found = {}
    with tarfile.open(fileobj=io.BytesIO(done.stdout)) as tar:
        for member in tar.getmembers():
            if member.isfile():
                file = tar.extractfile(member)
                assert file is not None  # a regular file's member has its bytes
                found[member.name] = file.read()
    return found


def test_a_restore_holds_what_the_original_did(engine, mnemoweave_home, tmp_path, keys):
    keyfile, public = keys
    fill(engine)
    (mnemoweave_home / "config.toml").write_text("trash_days = 14\n", encoding="utf-8")
    engine.close()
    out = tmp_path / "out" / "mw.age"
    out.parent.mkdir()
    made = backup(mnemoweave_home, out, [public])
    assert made["counts"]["memories"] == 4 and made["counts"]["turns"] == 3
    assert made["counts"]["cards"] >= 1 and made["files"] == ["mnemoweave.sqlite", "config.toml"]
    restored = restore(out, keyfile, tmp_path / "restored")
    assert restored["doctor"]["ok"], restored["doctor"]
    assert restored["counts"] == made["counts"] == restored["backup"]["counts"]

    from mnemoweave import Engine

    with Engine(mnemoweave_home) as original, Engine(tmp_path / "restored") as copy:
        assert copy.config.trash_days == 14  # config.toml came along
        assert copy.status()["counts"] == original.status()["counts"]
        assert searches(copy, "lexical") == searches(original, "lexical")
        assert all(searches(original, "lexical")), "a query found nothing: nothing compared"
        assert copy.entities() == original.entities() != []  # the graph, read again
    before, after = (
        tables(mnemoweave_home / "mnemoweave.sqlite"),
        tables(tmp_path / "restored" / "mnemoweave.sqlite"),
    )
    assert before["audit"] and before["memories"] and before["cards"] and before["turns"]
    assert after == before  # every row of every table: memories, turns, cards, audit, ...


def test_hybrid_search_is_the_same_after_a_restore(real_engine, mnemoweave_home, tmp_path):
    identity = pyrage.x25519.Identity.generate()
    keyfile = tmp_path / "key.txt"
    keyfile.write_text(f"# a test key\n{identity}\n", encoding="utf-8")
    fill(real_engine)
    assert (mnemoweave_home / "chroma").is_dir()
    before = searches(real_engine, "hybrid")
    real_engine.close()
    out = tmp_path / "mw.age"
    backup(mnemoweave_home, out, [str(identity.to_public())])
    restored = restore(out, keyfile, tmp_path / "restored")
    assert restored["retrieval"] == "hybrid (bm25 + use-m3)"
    assert restored["reindexed"] == {"graphed": 7, "memories": 4, "turns": 3}
    assert restored["doctor"]["ok"], restored["doctor"]  # vector index consistent with SQLite
    from mnemoweave import Engine

    with Engine(tmp_path / "restored") as copy, Engine(mnemoweave_home) as original:
        assert searches(copy, "hybrid") == before
        assert searches(copy, "dense") == searches(original, "dense")


def test_the_age_cli_decrypts_it_to_the_store_and_config_only(
    engine, mnemoweave_home, tmp_path, keys
):
    keyfile, public = keys
    fill(engine)
    engine.close()
    (mnemoweave_home / "config.toml").write_text('embedder = "none"\n', encoding="utf-8")
    # what a data dir holds beside the store: none of it belongs in a backup
    for name in ("chroma/index.bin", "models/m/model.onnx", "logs/daemon.log", "cache/x"):
        (mnemoweave_home / name).parent.mkdir(parents=True, exist_ok=True)
        (mnemoweave_home / name).write_text("derived", encoding="utf-8")
    for name in ("daemon.token", "daemon.pid", "store.lock"):
        (mnemoweave_home / name).write_text("x", encoding="utf-8")
    recipients = tmp_path / "recipients.txt"
    recipients.write_text(f"# the team's keys\n\n{public}\n", encoding="utf-8")
    out = tmp_path / "mw.age"
    result = CliRunner().invoke(cli, ["backup", "--to", str(out), "-r", str(recipients)])
    assert result.exit_code == 0, result.output
    assert result.output.startswith("backed up 4 memories, 3 turns")
    found = members(out, keyfile)
    assert set(found) == {"backup.json", "mnemoweave.sqlite", "config.toml"}
    assert found["config.toml"] == b'embedder = "none"\n'
    assert found["mnemoweave.sqlite"].startswith(b"SQLite format 3\x00")
    assert MARKER.encode() in found["mnemoweave.sqlite"]
    assert MARKER.encode() not in out.read_bytes()  # encrypted


def test_the_file_is_0600_even_replacing_an_open_one(engine, mnemoweave_home, tmp_path, keys):
    _, public = keys
    engine.remember("one memory")
    engine.close()
    out = tmp_path / "mw.age"
    out.write_text("an older backup", encoding="utf-8")
    out.chmod(0o644)
    backup(mnemoweave_home, out, [public])
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    assert out.read_bytes().startswith(b"age-encryption.org/v1\n")
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []  # no .part


def test_a_wrong_key_gets_one_line_and_writes_nothing(engine, mnemoweave_home, tmp_path, keys):
    _, public = keys
    engine.remember("one memory")
    engine.close()
    out = tmp_path / "mw.age"
    backup(mnemoweave_home, out, [public])
    other = tmp_path / "other.txt"
    other.write_text(f"{pyrage.x25519.Identity.generate()}\n", encoding="utf-8")
    before = sorted(tmp_path.iterdir())
    result = CliRunner().invoke(
        cli, ["restore", str(out), "--identity", str(other), "--to", str(tmp_path / "new")]
    )
    assert result.exit_code == 2
    line = result.output.strip()
    assert "\n" not in line and "wrong --identity" in line and str(other) in line, line
    assert sorted(tmp_path.iterdir()) == before  # no target, no temp dir left
    public_only = tmp_path / "public.txt"
    public_only.write_text(f"{public}\n", encoding="utf-8")
    with pytest.raises(InvalidInput, match="holds no age secret key"):
        restore(out, public_only, tmp_path / "new")  # the public key, not the secret one
    assert not (tmp_path / "new").exists()
    cut = tmp_path / "cut.age"  # a backup cut short: fails part-way through decryption
    cut.write_bytes(out.read_bytes()[: out.stat().st_size // 2])
    with pytest.raises(InvalidInput, match="damaged"):
        restore(cut, keys[0], tmp_path / "new")
    assert not (tmp_path / "new").exists()
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []


def test_a_non_empty_target_and_bad_recipients_are_refused(engine, mnemoweave_home, tmp_path, keys):
    keyfile, public = keys
    engine.remember("one memory")
    engine.close()
    out = tmp_path / "mw.age"
    target = tmp_path / "target"
    target.mkdir()
    (target / "notes.txt").write_text("mine", encoding="utf-8")
    backup(mnemoweave_home, out, [public])
    result = CliRunner().invoke(
        cli, ["restore", str(out), "--identity", str(keyfile), "--to", str(target)]
    )
    assert result.exit_code == 2 and "is not empty" in result.output
    assert [p.name for p in target.iterdir()] == ["notes.txt"]
    for bad, why in [
        ([], "at least one --recipient"),
        (["age1nope"], "not a valid age public key"),
        ([str(keyfile)], "that is a secret key"),
        ([str(tmp_path / "missing.txt")], "neither an age public key"),
    ]:
        with pytest.raises(InvalidInput, match=why):
            backup(mnemoweave_home, tmp_path / "x.age", bad)
    secret = next(
        line for line in keyfile.read_text().splitlines() if line.startswith("AGE-SECRET-KEY-")
    )
    given = CliRunner().invoke(cli, ["backup", "--to", str(tmp_path / "x.age"), "-r", secret])
    assert given.exit_code == 2 and "that is a secret key" in given.output
    assert secret not in given.output and secret[16:30] not in given.output  # never echoed
    assert not (tmp_path / "x.age").exists()
    empty = tmp_path / "empty"
    empty.mkdir()  # an empty directory is a fine target
    assert restore(out, keyfile, empty)["counts"]["memories"] == 1
    assert stat.S_IMODE(empty.stat().st_mode) == 0o700


def test_restore_id_still_takes_a_memory_out_of_the_trash(engine, tmp_path):
    ref = engine.remember("Keep the changelog short").id
    engine.forget(ref)
    engine.close()
    result = CliRunner().invoke(cli, ["restore", ref])
    assert result.exit_code == 0 and result.output.strip() == f"restored {ref}"
    half = CliRunner().invoke(cli, ["restore", "mw.age", "--to", str(tmp_path / "x")])
    assert half.exit_code == 2 and "needs both --identity" in half.output


def test_no_plaintext_is_left_outside_the_stores(
    engine, mnemoweave_home, tmp_path, keys, monkeypatch
):
    """Whatever happens, what the backup and restore wrote in plaintext is gone but for the
    restored store: the data dir's tmp, the output dir, the restore's parent and the
    system temp dir hold MARKER nowhere else."""
    keyfile, public = keys
    system_temp = tmp_path / "system-temp"
    system_temp.mkdir()
    monkeypatch.setattr("tempfile.tempdir", str(system_temp))
    fill(engine)
    engine.close()
    out_dir, parent = tmp_path / "out", tmp_path / "restores"
    out_dir.mkdir()
    parent.mkdir()

    def failing(*args):
        raise RuntimeError("the disk filled up mid-way")

    monkeypatch.setattr(pyrage, "encrypt_io", failing)  # a backup that fails half-way
    with pytest.raises(RuntimeError, match="disk filled"):
        backup(mnemoweave_home, out_dir / "mw.age", [public])
    assert list((mnemoweave_home / TMP_NAME).iterdir()) == [] and list(out_dir.iterdir()) == []
    monkeypatch.undo()
    monkeypatch.setattr("tempfile.tempdir", str(system_temp))
    backup(mnemoweave_home, out_dir / "mw.age", [public])
    restore(out_dir / "mw.age", keyfile, parent / "restored")
    needle = MARKER.encode()
    assert files_holding(mnemoweave_home / TMP_NAME, needle) == set()
    assert list((mnemoweave_home / TMP_NAME).iterdir()) == []
    assert files_holding(out_dir, needle) == set() and len(list(out_dir.iterdir())) == 1
    assert files_holding(system_temp, needle) == set()
    found = files_holding(parent, needle)
    assert "restored/mnemoweave.sqlite" in found
    assert found <= {"restored/mnemoweave.sqlite", "restored/mnemoweave.sqlite-wal"}, found
    assert [p.name for p in parent.iterdir()] == ["restored"]  # no temp dir beside it


def test_a_backup_while_the_daemon_runs_and_writes(tmp_path_factory, tmp_path, keys):
    keyfile, public = keys
    home = make_home(tmp_path_factory)
    daemon = start_daemon(home)
    try:
        for n in range(20):
            daemon.call("POST", "/v1/memories", {"text": f"Service {n} listens on port {8000 + n}"})
        wrote, failed = [], []

        def writer() -> None:  # keeps writing through the daemon while the backup runs
            for n in range(40):
                try:
                    body = {"text": f"Worker {n} drains queue q{n} every {n + 1} minutes"}
                    wrote.append(daemon.call("POST", "/v1/memories", body)["id"])
                except client.DaemonError as exc:
                    failed.append(str(exc))

        thread = threading.Thread(target=writer)
        thread.start()
        made = backup(home, tmp_path / "mw.age", [public])
        thread.join(timeout=120)
        assert not thread.is_alive() and not failed, failed
        assert 20 <= made["counts"]["memories"] <= 60
        # the daemon kept serving, and still does
        assert daemon.call("GET", "/v1/status")["counts"]["memories"] == 60
        assert daemon.call("POST", "/v1/memories", {"text": "After the backup"})["action"] == "new"
        assert daemon.process.poll() is None
        restored = restore(tmp_path / "mw.age", keyfile, tmp_path / "restored")
        assert restored["counts"] == made["counts"] and restored["doctor"]["ok"]
    finally:
        assert daemon.stop() == 0


def test_restore_to_a_new_dir_touches_nothing_else(engine, mnemoweave_home, tmp_path, keys):
    keyfile, public = keys
    engine.remember("以后代码注释都用英文", kind="pref")  # jieba reads it: its table is written
    engine.close()
    out = tmp_path / "mw.age"
    backup(mnemoweave_home, out, [public])
    user = tmp_path / "user"
    user.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "MNEMOWEAVE_HOME"} | {"HOME": str(user)}
    target = tmp_path / "new"
    done = subprocess.run(
        [sys.executable, "-m", "mnemoweave", "restore", str(out), "--identity", str(keyfile)]
        + ["--to", str(target), "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=WITHIN,
    )
    assert done.returncode == 0, done.stderr
    assert list(user.iterdir()) == []  # no ~/.mnemoweave, no cache in the home
    shared = Path(os.environ["XDG_CACHE_HOME"]) / "mnemoweave"  # what every data dir shares
    assert (shared / "jieba.sqlite").is_file()
    checks = json.loads(done.stdout)["doctor"]["checks"]
    assert str(user) not in json.dumps(checks)
