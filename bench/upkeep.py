"""Upkeep: seconds to propose a consolidation over a store of N memories, to back it up
(encrypted) and to restore it.

For each size (--sizes, comma-separated) a fresh store gets corpus.py's N memories (`fill`,
with the run's models), and `config.toml` names the run's embedder. Then it times
`consolidate propose` over every project (neighbours from the vector index, clashes,
chains, stale memories; it records a run and changes no memory), `mnemoweave.upkeep.backup`'s
`backup` (snapshot, tar, age encryption to one X25519 key, 0600 file) and `restore`
(decryption, unpacking, opening the store, rebuilding the full-text and vector indexes
with the run's models, `doctor`). Targets at 10,000 memories: propose under 30 s, backup
under 10 s.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path
from time import perf_counter
from typing import Any

import pyrage

from corpus import DEV_PROJECTS, OTHER_PROJECTS, fill
from harness import load_embedders, progress

TARGET_SECONDS = 10.0  # a backup of 10,000 memories
PROPOSE_TARGET_SECONDS = 30.0  # a consolidation proposal over 10,000 memories


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--sizes", default="10000", help="memories per store, comma-separated")


def sizes(text: str) -> list[int]:
    found = sorted({int(part) for part in text.split(",") if part.strip()})
    if not found or found[0] < 1:
        raise SystemExit(f"--sizes {text}: give one or more positive sizes, comma-separated")
    return found


def one_size(n: int, args: argparse.Namespace, embedders: list[Any]) -> dict[str, Any]:
    """Fill a store with `n` memories, then time a consolidation proposal, its backup and
    its restore."""
    from mnemoweave import Engine
    from mnemoweave.upkeep.backup import backup, restore

    projects = {name: name for name in (*DEV_PROJECTS, *OTHER_PROJECTS)}
    identity = pyrage.x25519.Identity.generate()
    where = tempfile.TemporaryDirectory(prefix="backup-", dir=os.environ["MNEMOWEAVE_HOME"])
    with where as root:
        home, keyfile, out = Path(root, "home"), Path(root, "key.txt"), Path(root, "mw.age")
        home.mkdir()
        (home / "config.toml").write_text(f'embedder = "{args.embedder}"\n', encoding="utf-8")
        keyfile.write_text(f"{identity}\n", encoding="utf-8")
        with Engine(home=home) as engine:
            engine.use_embedder(*embedders)
            fill(engine, n, projects)
            started = perf_counter()
            proposed = engine.consolidate_propose(project=None)
            propose_seconds = perf_counter() - started
        progress(f"upkeep: {n} memories, a proposal in {propose_seconds:.1f}s; backing up")
        started = perf_counter()
        made = backup(home, out, [str(identity.to_public())])
        backup_seconds = perf_counter() - started
        progress(f"upkeep: {n} memories backed up in {backup_seconds:.1f}s; restoring")
        started = perf_counter()
        restored = restore(out, keyfile, Path(root, "restored"))
        restore_seconds = perf_counter() - started
    return {
        "memories": made["counts"]["memories"],
        "propose_seconds": round(propose_seconds, 2),
        "proposed_items": len(proposed["items"]),
        "store_mb": round(made["store_bytes"] / 1e6, 1),
        "backup_mb": round(made["bytes"] / 1e6, 1),
        "backup_seconds": round(backup_seconds, 2),
        "restore_seconds": round(restore_seconds, 2),
        "restored_memories": restored["counts"]["memories"],
        "restore_retrieval": restored["retrieval"],
        "restore_doctor_ok": restored["doctor"]["ok"],
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    chosen = sizes(args.sizes)
    embedders = load_embedders(args.embedder, args.models)
    report: dict[str, Any] = {
        "sizes": chosen,
        "target_backup_seconds": TARGET_SECONDS,
        "target_propose_seconds": PROPOSE_TARGET_SECONDS,
    }
    previous = os.environ.get("MNEMOWEAVE_MODELS")
    os.environ["MNEMOWEAVE_MODELS"] = str(args.models)  # what restore's reindex loads
    try:
        for n in chosen:
            progress(f"upkeep: storing {n} memories")
            report[str(n)] = one_size(n, args, embedders)
    finally:
        if previous is None:
            del os.environ["MNEMOWEAVE_MODELS"]
        else:
            os.environ["MNEMOWEAVE_MODELS"] = previous
    largest = report[str(chosen[-1])]
    report["backup_within_target"] = largest["backup_seconds"] < TARGET_SECONDS
    report["propose_within_target"] = largest["propose_seconds"] < PROPOSE_TARGET_SECONDS
    return report
