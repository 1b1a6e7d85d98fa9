"""Import and export: records in, drafts written all or nothing; the store out as file
contents. Reading and writing the files themselves is the caller's (the CLI's): the
daemon never opens a path it is given."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from mnemoweave.capture import file_formats
from mnemoweave.capture.writes import draft_memory, draft_of
from mnemoweave.errors import InvalidInput
from mnemoweave.model import Memory, Turn, check_importance
from mnemoweave.store import memories as memories_table
from mnemoweave.store import turns as turns_table

if TYPE_CHECKING:
    from mnemoweave.engine import Engine


def import_records(
    engine: Engine, records: Sequence[Turn | file_formats.MemoryRecord]
) -> dict[str, int]:
    """Import turns and memories (read by `file_formats.collect`), all or nothing."""
    turns, memories = [], []
    for index, record in enumerate(records):
        if isinstance(record, Turn):
            key = record.key or (
                None if record.ts is not None else file_formats.line_key(record, index)
            )
            turns.append(draft_of(record, key))
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
                    created=record.created,
                    updated=record.updated,
                )
            )
    counts = {"turns": 0, "memories": 0, "merged": 0, "duplicate": 0, "skipped": 0}
    for bucket, results in (
        ("turns", engine.write_turns(turns, actor="import")),
        ("memories", engine.write_memories(memories, actor="import")),
    ):
        for result in results:
            counts[bucket if result.action == "new" else result.action] += 1
    return counts


def import_text(engine: Engine, name: str, text: str) -> dict[str, int]:
    """Import one uploaded file's text, parsed by its name's suffix (.jsonl turns, .md
    memories), all or nothing."""
    name = " ".join(name.split())  # it is quoted in one-line errors
    if len(text.encode("utf-8")) > file_formats.MAX_IMPORT_BYTES:
        raise InvalidInput(
            f"{name}: the import is over {file_formats.MAX_IMPORT_BYTES // 2**20} MB;"
            " import it in parts"
        )
    return import_records(engine, file_formats.parse_named(name, text))


def export_files(engine: Engine, per_memory: bool = False) -> dict[str, str]:
    """File name -> content: active memories as Markdown (one file per project, or with
    `per_memory` one note per memory under memories/), turns as JSONL, and the knowledge
    graph of the memories (graph/export.py)."""
    from mnemoweave.graph.export import files as graph_files

    active = list(memories_table.active(engine.db))
    if per_memory:
        files = {
            f"memories/{file_formats.note_filename(m)}": file_formats.render_note(m) for m in active
        }
    else:
        by_project: dict[str, list[Memory]] = {}
        for memory in active:
            by_project.setdefault(memory.project, []).append(memory)
        files = {
            file_formats.project_filename(project): file_formats.render_markdown(project, memories)
            for project, memories in sorted(by_project.items())
        }
    turns = turns_table.transcript(engine.db)
    if turns:
        lines = [file_formats.turn_line(turn) for turn in turns]
        files["turns.jsonl"] = "\n".join(lines) + "\n"
    return files | graph_files(engine)


def write_files(directory: Path, files: dict[str, str]) -> list[Path]:
    """Write an export into `directory` (created if needed); the paths written."""
    directory = Path(directory)
    try:
        directory.mkdir(parents=True, exist_ok=True)
        for name, content in files.items():
            (directory / name).parent.mkdir(exist_ok=True)  # graph/ and memories/ hold notes
            (directory / name).write_text(content, encoding="utf-8")
    except OSError as exc:
        raise InvalidInput(f"cannot write the export into {directory}: {exc}") from None
    return [directory / name for name in files]
