"""Encrypted backup and restore of a data dir (`mnemoweave backup` / `restore FILE.age`).

`backup` takes a consistent snapshot of the SQLite store beside whatever else has it open
(a running daemon included: it reads, never takes the store lock), adds `config.toml`,
packs both with a small `backup.json` into a tar and encrypts it with age (pyrage) to one
or more X25519 recipients. The vector index, models, caches, logs, socket, pid and token
are left out: `restore` rebuilds what can be rebuilt. Plaintext only ever exists in a
private temp dir (0700, removed whatever happens); the output is written 0600 beside its
final name and renamed into place.

`restore` decrypts with an identity file, checks the archive, unpacks it into a new data
dir (0700, files 0600), opens it with the Engine, rebuilds its indexes and runs `doctor`.
A wrong key, a damaged file or a target that is not empty are refused in one line before
anything is left behind.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sqlite3
import tarfile
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyrage

from mnemoweave import __version__
from mnemoweave.config import load_config
from mnemoweave.errors import InvalidInput
from mnemoweave.model import iso
from mnemoweave.store import cards as cards_table
from mnemoweave.store import memories as memories_table
from mnemoweave.store import skills as skills_table
from mnemoweave.store import turns as turns_table
from mnemoweave.store.db import DB_NAME
from mnemoweave.store.db import snapshot as db_snapshot
from mnemoweave.store.private import make_dir, restrict

FORMAT = 1  # backup.json's "format": what this version writes and reads
CONFIG_NAME = "config.toml"
MANIFEST_NAME = "backup.json"
MEMBERS = (DB_NAME, CONFIG_NAME, MANIFEST_NAME)  # everything an archive may hold
TMP_NAME = "tmp"  # the data dir's own temp dir, where a backup's snapshot is made
PUBLIC_PREFIX = "age1"
SECRET_PREFIX = "AGE-SECRET-KEY-1"
NO_MATCHING_KEY = "No matching keys found"  # pyrage's DecryptError for a wrong identity


# --- keys ------------------------------------------------------------------------------------


def _key_lines(path: Path, what: str) -> list[tuple[int, str]]:
    """The (line number, text) of a key file's keys: blank lines and `#` comments skipped."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInput(f"{what} {path}: cannot read it ({exc})") from None
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if stripped and not stripped.startswith("#"):
            found.append((number, stripped))
    return found


def _recipient(key: str, where: str) -> Any:
    if key.upper().startswith(SECRET_PREFIX):
        raise InvalidInput(
            f"{where}: that is a secret key; give its public key (`age-keygen -y KEYFILE`)"
        )
    if not key.startswith(PUBLIC_PREFIX):
        raise InvalidInput(f"{where}: not an age public key (age1...): {key[:20]}...")
    try:
        return pyrage.x25519.Recipient.from_str(key)
    except pyrage.RecipientError as exc:
        raise InvalidInput(f"{where}: not a valid age public key ({exc})") from None


def parse_recipients(given: list[str]) -> list[Any]:
    """Each `--recipient`: an age public key, or a file of them (one a line, `#` comments)."""
    if not given:
        raise InvalidInput("give at least one --recipient: an age public key (age1...) or a file")
    found = []
    for item in given:
        if item.startswith(PUBLIC_PREFIX) or item.strip().upper().startswith(SECRET_PREFIX):
            found.append(_recipient(item.strip(), "--recipient"))  # a secret is never echoed
            continue
        path = Path(item).expanduser()
        if not path.is_file():
            raise InvalidInput(
                f"--recipient {item}: neither an age public key (age1...) nor a file of them"
            )
        keys = _key_lines(path, "--recipient")
        if not keys:
            raise InvalidInput(f"--recipient {path}: holds no age public key")
        found += [_recipient(key, f"--recipient {path}, line {n}") for n, key in keys]
    return found


def parse_identities(path: Path) -> list[Any]:
    """The age secret keys of an identity file (as `age-keygen` writes it)."""
    if not path.is_file():
        raise InvalidInput(f"--identity {path}: no such file")
    keys = _key_lines(path, "--identity")
    secret = [(n, key) for n, key in keys if key.upper().startswith(SECRET_PREFIX)]
    if not secret:
        raise InvalidInput(f"--identity {path}: holds no age secret key (AGE-SECRET-KEY-1...)")
    found = []
    for number, key in secret:
        try:
            found.append(pyrage.x25519.Identity.from_str(key))
        except pyrage.IdentityError as exc:
            raise InvalidInput(
                f"--identity {path}, line {number}: not a valid age secret key ({exc})"
            ) from None
    return found


# --- backup ----------------------------------------------------------------------------------


@contextlib.contextmanager
def private_temp(parent: Path, prefix: str) -> Iterator[Path]:
    """A new directory (0700) under `parent`, removed with everything in it on the way out."""
    folder = Path(tempfile.mkdtemp(prefix=prefix, dir=parent))  # mkdtemp makes it 0700
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _read_only(path: Path) -> sqlite3.Connection:
    """A read-only connection: no migration, no write, no lock a writer would wait on."""
    return sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=10.0)


def snapshot(store: Path, dest: Path) -> dict[str, int]:
    """Copy the store as of one read transaction into `dest` (`VACUUM INTO`: a consistent,
    compact snapshot while a daemon goes on writing); the snapshot's counts."""
    db_snapshot(store, dest)
    copy = _read_only(dest)
    try:
        return {
            "memories": memories_table.count(copy),
            "turns": turns_table.count(copy),
            "cards": cards_table.count(copy),
            "skills": skills_table.count(copy),
        }
    finally:
        copy.close()


def _check_output(to: Path) -> None:
    if to.is_dir():
        raise InvalidInput(f"--to {to}: is a directory; give the backup file's name")
    if not to.parent.is_dir():
        raise InvalidInput(f"--to {to}: no such directory {to.parent}")


def _encrypt_into(plain: Path, to: Path, keys: list[Any]) -> int:
    """Encrypt `plain` to `keys` into `to`: written 0600 beside it, then renamed into place;
    the size written."""
    fd, temporary = tempfile.mkstemp(prefix=f".{to.name}.", suffix=".part", dir=to.parent)
    try:
        with open(plain, "rb") as reader, os.fdopen(fd, "wb") as writer:
            pyrage.encrypt_io(reader, writer, keys)
            writer.flush()
            os.fsync(writer.fileno())
        os.replace(temporary, to)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return to.stat().st_size


def backup(home: Path, to: Path, recipients: list[str]) -> dict[str, Any]:
    """Back the data dir `home` up, encrypted to `recipients` (age public keys, or files of
    them), into the file `to`."""
    restrict()
    started = time.monotonic()
    keys = parse_recipients(recipients)
    to = to.expanduser().absolute()
    _check_output(to)
    store = home / DB_NAME
    if not store.is_file():
        raise InvalidInput(f"no store in {home}: nothing to back up")
    make_dir(home / TMP_NAME)
    with private_temp(home / TMP_NAME, ".backup-") as work:
        counts = snapshot(store, work / DB_NAME)
        config = home / CONFIG_NAME
        manifest = {
            "format": FORMAT,
            "mnemoweave": __version__,
            "created": iso(time.time()),
            "counts": counts,
            "files": [DB_NAME] + ([CONFIG_NAME] if config.is_file() else []),
        }
        (work / MANIFEST_NAME).write_text(json.dumps(manifest, indent=2), encoding="utf-8")
        archive = work / "backup.tar"
        with tarfile.open(archive, "w") as tar:
            tar.add(work / MANIFEST_NAME, arcname=MANIFEST_NAME)
            tar.add(work / DB_NAME, arcname=DB_NAME)
            if config.is_file():
                tar.add(config, arcname=CONFIG_NAME)
        store_bytes = (work / DB_NAME).stat().st_size
        written = _encrypt_into(archive, to, keys)
    return {
        "to": str(to),
        "bytes": written,
        "store_bytes": store_bytes,
        "files": manifest["files"],
        "counts": counts,
        "recipients": len(keys),
        "seconds": round(time.monotonic() - started, 2),
    }


# --- restore ---------------------------------------------------------------------------------


def _check_target(to: Path) -> None:
    if to.exists() and not to.is_dir():
        raise InvalidInput(f"--to {to}: is a file; give a new or empty directory")
    if to.is_dir() and any(to.iterdir()):
        raise InvalidInput(f"--to {to}: is not empty; restore into a new or empty directory")
    if not to.parent.is_dir():
        raise InvalidInput(f"--to {to}: no such directory {to.parent}")


def _decrypt_into(source: Path, plain: Path, keys: list[Any], identity: Path) -> None:
    try:
        with open(source, "rb") as reader, open(plain, "wb") as writer:
            pyrage.decrypt_io(reader, writer, keys)
    except pyrage.DecryptError as exc:
        if str(exc) == NO_MATCHING_KEY:
            raise InvalidInput(
                f"{source}: not encrypted to any key in {identity} (wrong --identity); "
                "nothing was restored"
            ) from None
        raise InvalidInput(
            f"{source}: not an age file, or damaged ({exc}); nothing was restored"
        ) from None
    except OSError as exc:  # what pyrage raises for a chunk that fails to decrypt (truncated)
        raise InvalidInput(f"{source}: damaged ({exc}); nothing was restored") from None


def _unpack(archive: Path, into: Path, source: Path) -> dict[str, Any]:
    """Write the archive's members into `into` (files 0600); its backup.json."""
    wrong = f"{source}: not a mnemoweave backup"
    try:
        with tarfile.open(archive, "r:") as tar:
            members = tar.getmembers()
            names = [m.name for m in members]
            odd = [m.name for m in members if m.name not in MEMBERS or not m.isfile()]
            if odd or len(set(names)) != len(names) or DB_NAME not in names:
                raise InvalidInput(f"{wrong} (it holds {', '.join(names) or 'nothing'})")
            for member in members:
                data = tar.extractfile(member)
                assert data is not None  # a regular file, checked above
                fd = os.open(into / member.name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                with os.fdopen(fd, "wb") as out:
                    shutil.copyfileobj(data, out)
    except tarfile.TarError as exc:
        raise InvalidInput(f"{wrong} ({exc})") from None
    where = into / MANIFEST_NAME
    try:
        manifest = json.loads(where.read_text(encoding="utf-8")) if where.is_file() else {}
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InvalidInput(f"{wrong}: its {MANIFEST_NAME} does not read ({exc})") from None
    if not isinstance(manifest, dict) or not isinstance(manifest.get("format", FORMAT), int):
        raise InvalidInput(f"{wrong}: its {MANIFEST_NAME} is not one mnemoweave writes")
    if manifest.get("format", FORMAT) > FORMAT:
        newer = manifest.get("mnemoweave")
        raise InvalidInput(f"{source}: written by a newer mnemoweave ({newer}); upgrade first")
    where.unlink(missing_ok=True)  # the archive's own, not part of a data dir
    load_config(into)  # its config.toml is one this version reads (else: refused by name)
    return manifest


def restore(source: Path, identity: Path, to: Path) -> dict[str, Any]:
    """Restore the backup `source` into the new data dir `to`, then rebuild its indexes
    and check it with `doctor`."""
    from mnemoweave.engine import Engine
    from mnemoweave.upkeep.health import doctor
    from mnemoweave.upkeep.indexing import reindex

    restrict()
    started = time.monotonic()
    to = to.expanduser().absolute()
    if not source.is_file():
        raise InvalidInput(f"{source}: no such backup file")
    _check_target(to)
    keys = parse_identities(identity)
    with private_temp(to.parent, f".{to.name}.restore-") as work:
        _decrypt_into(source, work / "backup.tar", keys, identity)
        unpacked = work / "home"
        make_dir(unpacked)
        manifest = _unpack(work / "backup.tar", unpacked, source)
        (work / "backup.tar").unlink()
        try:
            os.replace(unpacked, to)  # onto an empty directory, or a new name
        except OSError as exc:
            raise InvalidInput(f"--to {to}: cannot restore there ({exc.strerror})") from None
    with Engine(home=to) as engine:
        reindexed = reindex(engine)
        checks = doctor(engine)
        counts = engine.status()["counts"]
        retrieval = engine.retrieval_mode()
    return {
        "to": str(to),
        "backup": {k: manifest.get(k) for k in ("created", "mnemoweave", "counts")},
        "counts": counts,
        "reindexed": reindexed,
        "retrieval": retrieval,
        "doctor": {
            "ok": all(check.ok for check in checks),
            "checks": [check.to_dict() for check in checks],
        },
        "seconds": round(time.monotonic() - started, 2),
    }
