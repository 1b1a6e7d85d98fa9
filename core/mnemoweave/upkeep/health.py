"""`status` (what is stored) and `doctor` (is everything sound)."""

from __future__ import annotations

import os
import platform
import sqlite3
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mnemoweave import __version__, text
from mnemoweave.recall.retrieve import built_mode
from mnemoweave.store import cards as cards_table
from mnemoweave.store import damage, fts, private, quarantine
from mnemoweave.store import memories as memories_table
from mnemoweave.store import skills as skills_table
from mnemoweave.store import turns as turns_table
from mnemoweave.store.db import journal_mode, transaction
from mnemoweave.store.migrations import MIGRATIONS, applied
from mnemoweave.upkeep import indexing

if TYPE_CHECKING:
    from mnemoweave.engine import Engine


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "ok": self.ok, "detail": self.detail}


def _size(paths: list[Path]) -> int:
    return sum(p.stat().st_size for p in paths if p.is_file())


def status(engine: Engine) -> dict[str, Any]:
    db = engine.db
    counts = {
        "turns": turns_table.count(db),
        "memories": memories_table.count(db),
        "cards": cards_table.count(db),
        "skills": skills_table.count(db),
    }
    by_status = memories_table.by_status(db)
    names = applied(db)
    files, vectors = list(engine.home.rglob("*")), engine.home / "chroma"
    return {
        "counts": counts,
        "memories_by_status": by_status,
        "capacity": {
            "active": by_status.get("active", 0),
            "max_memories": engine.config.max_memories,  # 0: no limit
        },
        "turns_by_host": turns_table.by_host(db),
        "memories_by_kind": memories_table.counts_by(db, "kind"),
        "memories_by_tag": memories_table.counts_by(db, "tag"),
        "pending_cards": cards_table.pending_count(db, None),
        "retrieval": built_mode(engine.home, engine.config, engine.pm),
        "catching_up": dict(engine.catching_up),  # model -> {done, total} rows re-embedded
        "plugin_failures": dict(engine.pm.failures),
        "plugin_clashes": list(engine.pm.clashes),
        "spool": _spool(engine.home),
        "data_dir": str(engine.home),
        "db_path": str(engine.db_path),
        "sizes": {
            "db_bytes": _size(
                [
                    engine.db_path.with_name(engine.db_path.name + suffix)
                    for suffix in ("", "-wal", "-shm")
                ]
            ),
            "vector_index_bytes": _size([p for p in files if vectors in p.parents]),
            "data_dir_bytes": _size(files),
        },
        "versions": {
            "mnemoweave": __version__,
            "python": platform.python_version(),
            "sqlite": sqlite3.sqlite_version,
            "schema": names[-1] if names else None,
        },
    }


def _spool(home: Path) -> dict[str, Any]:
    """Payloads waiting in the spool, and whether its reserve for a full disk is there
    (None: no spool yet)."""
    from mnemoweave.store.spooled import RESERVE, SPOOL, spooled_names

    folder = home / SPOOL
    if not folder.is_dir():
        return {"waiting": 0, "reserve": None}
    return {"waiting": len(spooled_names(home)), "reserve": (folder / RESERVE).is_file()}


def _models_check(engine: Engine) -> Check:
    """Where the built models are (one cache for every data dir), and which are built."""
    from mnemoweave.embed import built, models_dir, registered

    names = [name for name in registered(engine.pm) if built(name, engine.pm, engine.home)]
    found = f"built: {', '.join(names)}" if names else "none built: run `mnemoweave model build`"
    return Check("models", True, f"{models_dir()} ({found})")


def _retrieval_checks(engine: Engine, repair: bool) -> list[Check]:
    """Where the models are, the embedding model and the vector index's agreement with
    SQLite."""
    embedder = engine.embedder  # loads the models: a data dir's own are moved in first
    checks = [_models_check(engine), Check("semantic search", True, engine.retrieval_mode())]
    if embedder is None:
        return checks  # lexical-only still works, so this is reported, not failed
    gaps = indexing.drift(engine)
    if repair and any(missing or extra for missing, extra in gaps.values()):
        indexing.repair(engine)
        gaps = indexing.drift(engine)
    for (model, table), (missing, extra) in gaps.items():
        ok = not missing and not extra
        detail = (
            "consistent with SQLite"
            if ok
            else (
                f"{missing} rows not embedded, {extra} stale vectors"
                + ("" if repair else "; run `mnemoweave doctor --repair`")
            )
        )
        checks.append(Check(f"vector index ({model}, {table})", ok, detail))
    return checks


def _private_check(home: Path, repair: bool) -> Check:
    """Nothing under the data dir open to group or others; `repair` closes what is."""
    if repair:
        private.tighten(home)
    found = private.loose(home)
    if not found:
        return Check("private files", True, "nothing open to group or others (0700 / 0600)")
    top = home.resolve()
    named = ", ".join(
        "the data dir" if path == top else os.path.relpath(path, top) for path in found[:5]
    )
    more = f" and {len(found) - 5} more" if len(found) > 5 else ""
    fix = (
        "their modes cannot be changed: are they another user's?"
        if repair
        else f"run `mnemoweave doctor --repair` (or `chmod -R go= {top}`)"
    )
    return Check(
        "private files",
        False,
        f"{len(found)} open to group or others ({named}{more}); {fix}",
    )


def _integrity_check(engine: Engine) -> Check:
    """SQLite's integrity check. A store that fails it takes no more writes until it passes
    again (see store/damage.py), and the check says how to recover."""
    try:
        found = damage.integrity(engine.db)
    except sqlite3.DatabaseError as exc:
        if not damage.is_corruption(exc):
            raise
        found = str(exc)
    if found == "ok":
        damage.clear(engine.db_path)
        return Check("store integrity", True, f"{engine.db_path}: ok")
    damage.mark(engine.db_path, found)
    detail = f"{engine.db_path}: {found}; writes are stopped. {damage.recovery(engine.db_path)}"
    return Check("store integrity", False, detail)


def _decodable_check(engine: Engine, repair: bool) -> Check:
    """Rows whose text is not valid UTF-8 (no command can read them); with `repair`, moved
    aside into quarantine/ (see store/quarantine.py)."""
    found = quarantine.undecodable(engine.db)
    if not found:
        return Check("readable rows", True, "every row's text is valid UTF-8")
    ids = ", ".join(f"{table[0]}_{i}" for table, rows in found.items() for i in rows)
    if not repair:
        detail = f"not valid UTF-8: {ids}; run `mnemoweave doctor --repair` to move them aside"
        return Check("readable rows", False, detail)
    moved = quarantine.quarantine(engine.db, engine.home, found)
    where = engine.home / quarantine.FOLDER
    return Check("readable rows", True, f"{len(moved)} moved to {where} (not valid UTF-8: {ids})")


def doctor(engine: Engine, repair: bool = False) -> list[Check]:
    """Run every check; with `repair`, fix what can be fixed (the indexes, file modes)."""
    integrity = _integrity_check(engine)  # opening creates the data dir
    checks = [
        Check("python", sys.version_info >= (3, 11), platform.python_version()),
        Check("data dir", os.access(engine.home, os.W_OK), str(engine.home)),
        _private_check(engine.home, repair),
        integrity,
    ]
    if not integrity.ok:
        return checks  # the other checks would read a store that cannot be trusted
    db = engine.db
    mode = journal_mode(db)
    checks.append(Check("journal mode", mode == "wal", mode))
    wanted = [m.__name__ for m in MIGRATIONS]
    have = applied(db)
    checks.append(
        Check(
            "schema",
            have == wanted,
            f"applied {len(have)}/{len(wanted)}: {have[-1] if have else 'none'}",
        )
    )
    checks.append(_decodable_check(engine, repair))
    for table, module in (("memories", memories_table), ("turns", turns_table)):
        missing, extra = fts.missing_and_extra(db, table)
        if (missing or extra) and repair:
            with transaction(db):
                module.reindex(db)
            missing, extra = fts.missing_and_extra(db, table)
        ok = not missing and not extra
        detail = "consistent" if ok else f"{missing} rows not indexed, {extra} stale entries"
        checks.append(
            Check(
                f"full-text index ({table})",
                ok,
                detail + ("" if ok or repair else "; run `mnemoweave doctor --repair`"),
            )
        )
    checks += _retrieval_checks(engine, repair)
    words = text.tokens("以后代码注释都用英文")
    dictionary = text.jieba_dictionary()
    checks.append(
        Check(
            "chinese segmentation",
            "注释" in words and dictionary.is_file(),
            f"{' / '.join(words)}; dictionary {dictionary}",
        )
    )
    return checks
