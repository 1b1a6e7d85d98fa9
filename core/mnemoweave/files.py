"""Import and export: files in, drafts written all or nothing; store out as files."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from . import transfer
from .errors import InvalidInput
from .model import Memory, Turn
from .store import memories as memories_table
from .store import turns as turns_table
from .writes import check_importance, draft_memory, draft_turn

if TYPE_CHECKING:
    from .engine import Engine


def import_path(engine: Engine, path: Path) -> dict[str, int]:
    """Import turns (.jsonl) and memories (.md) from a file or directory, all or nothing."""
    records = transfer.collect(path)
    turns, memories = [], []
    for index, record in enumerate(records):
        if isinstance(record, Turn):
            key = record.key or (
                None if record.ts is not None else transfer.line_key(record, index)
            )
            turns.append(
                draft_turn(
                    record.session,
                    record.role,
                    record.text,
                    host=record.host,
                    project=record.project,
                    ts=record.ts,
                    key=key,
                )
            )
        else:
            importance = record.importance or engine.config.default_importance
            check_importance(importance)
            memories.append(
                draft_memory(
                    record.body,
                    kind=record.kind,
                    project=record.project,
                    tags=record.tags,
                    importance=importance,
                    title=record.title or None,
                    evidence=record.evidence,
                    origin="import",
                )
            )
    counts = {"turns": 0, "memories": 0, "merged": 0, "duplicate": 0, "skipped": 0}
    writer = engine._writer()
    for bucket, results in (
        ("turns", engine._store_turns(turns, actor="import")),
        ("memories", writer.memories(memories, actor="import")),
    ):
        for result in results:
            counts[bucket if result.action == "new" else result.action] += 1
    return counts


def export(engine: Engine, directory: Path) -> list[Path]:
    """Write active memories as Markdown (one file per project) and turns as JSONL."""
    directory = Path(directory)
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InvalidInput(f"cannot create {directory}: {exc}") from None
    by_project: dict[str, list[Memory]] = {}
    for row in engine.db.execute("SELECT * FROM memories WHERE status = 'active' ORDER BY id"):
        memory = memories_table.from_row(row)
        by_project.setdefault(memory.project, []).append(memory)
    written = []
    for project, memories in sorted(by_project.items()):
        path = directory / transfer.project_filename(project)
        path.write_text(transfer.render_markdown(project, memories), encoding="utf-8")
        written.append(path)
    rows = engine.db.execute("SELECT * FROM turns ORDER BY session_id, seq").fetchall()
    if rows:
        path = directory / "turns.jsonl"
        lines = [transfer.turn_line(turns_table.from_row(r)) for r in rows]
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        written.append(path)
    return written
