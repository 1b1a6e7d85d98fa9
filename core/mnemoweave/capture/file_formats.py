"""File formats for import and export: JSONL turns and Markdown memories.

Parsing is pure (text in, plain records out) so a bad file is refused before anything is
written. Markdown: optional `---` frontmatter (`kind`, `project`, `tags`, `importance`) sets
defaults; each `## heading` starts a memory whose title is the heading; an HTML comment line
`<!-- mnemoweave: kind=pref importance=4 tags=a,b -->` under a heading overrides the
defaults for that memory (export writes one). A file without `##` headings is one memory.
"""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

from mnemoweave.errors import InvalidInput
from mnemoweave.model import Memory, Turn, check_kind, check_role, check_time, sane_time
from mnemoweave.text import fingerprint

T = TypeVar("T")


@dataclass(frozen=True)
class MemoryRecord:
    body: str
    title: str = ""
    kind: str = "fact"
    project: str = ""
    tags: tuple[str, ...] = ()
    importance: int | None = None
    evidence: tuple[str, ...] = field(default=())


def parse_time(value: Any, where: str) -> float:
    """Epoch seconds or an ISO 8601 string (a trailing Z is UTC) -> epoch seconds, between
    1970 and 2200."""
    if isinstance(value, bool):
        raise InvalidInput(f"{where}: ts must be a number or an ISO 8601 string")
    if isinstance(value, int | float):
        return float(_located(check_time, value, where))
    if isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            parsed = None
        if parsed is not None:
            if not 1970 <= parsed.year < 2200 or not sane_time(parsed.timestamp()):
                raise InvalidInput(
                    f"{where}: ts must be a time between 1970 and 2200, got {value!r}"
                )
            return parsed.timestamp()
    raise InvalidInput(f"{where}: ts must be a number or an ISO 8601 string, got {value!r}")


def _located(check: Callable[[T], T], value: T, where: str) -> T:
    """Run a model check, naming the place in the file when it fails."""
    try:
        return check(value)
    except InvalidInput as exc:
        raise InvalidInput(f"{where}: {exc}") from None


def _string(obj: dict[str, Any], name: str, where: str, required: bool = False) -> str:
    value = obj.get(name, "")
    if value is None:
        value = ""
    if not isinstance(value, str):
        raise InvalidInput(f"{where}: {name} must be a string")
    if required and not value.strip():
        raise InvalidInput(f"{where}: {name} is missing or empty")
    return value


TURN_FIELDS = ("session", "role", "text", "ts", "host", "project", "key")
MEMORY_FIELDS = ("kind", "project", "tags", "importance")  # frontmatter; a heading's own
SECTION_FIELDS = (*MEMORY_FIELDS, "evidence", "id")  # comment adds these (id: not kept)


def _known(given: Any, accepted: tuple[str, ...], where: str) -> None:
    """Refuse fields an import does not know, by name, as the API does."""
    unknown = sorted(set(given) - set(accepted))
    if unknown:
        names = ", ".join(repr(name) for name in unknown)
        raise InvalidInput(f"{where}: unknown field(s) {names}; accepted: {', '.join(accepted)}")


def parse_jsonl(text: str, source: str) -> list[Turn]:
    """JSONL lines `{session, role, text, ts?, host?, project?, key?}` -> turn records."""
    records = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{source}:{lineno}"
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InvalidInput(f"{where}: not valid JSON ({exc.msg})") from None
        if not isinstance(obj, dict):
            raise InvalidInput(f"{where}: expected a JSON object")
        _known(obj, TURN_FIELDS, where)
        ts = obj.get("ts")
        records.append(
            Turn(
                session=_string(obj, "session", where, required=True),
                role=_located(check_role, _string(obj, "role", where, required=True), where),
                text=_string(obj, "text", where, required=True),
                ts=None if ts is None else parse_time(ts, where),
                host=_string(obj, "host", where),
                project=_string(obj, "project", where),
                key=_string(obj, "key", where) or None,
            )
        )
    return records


# --- Markdown ---------------------------------------------------------------------------

_META = re.compile(r"^<!--\s*mnemoweave:(.*?)-->\s*$")


def _split_list(value: str) -> tuple[str, ...]:
    value = value.strip().strip("[]")
    return tuple(part.strip().strip("'\"") for part in value.split(",") if part.strip())


def _apply_meta(
    meta: dict[str, str], defaults: dict[str, Any], where: str, allowed: tuple[str, ...]
) -> dict[str, Any]:
    _known(meta, allowed, where)
    out = dict(defaults)
    for key, value in meta.items():
        if key == "kind":
            out["kind"] = _located(check_kind, value, where)
        elif key == "tags":
            out["tags"] = _split_list(value)
        elif key == "importance":
            try:
                out["importance"] = int(value)
            except ValueError:
                raise InvalidInput(f"{where}: importance must be 1-5, got {value!r}") from None
        elif key == "project":
            out["project"] = value.strip().strip("'\"")
        elif key == "evidence":
            out["evidence"] = _split_list(value)
    return out


def _frontmatter(lines: list[str], where: str) -> tuple[dict[str, str], list[str]]:
    if not lines or lines[0].strip() != "---":
        return {}, lines
    for end in range(1, len(lines)):
        if lines[end].strip() == "---":
            meta = {}
            for line in lines[1:end]:
                if not line.strip() or line.lstrip().startswith("#"):
                    continue
                if ":" not in line:
                    raise InvalidInput(f"{where}: frontmatter line is not 'key: value': {line!r}")
                key, value = line.split(":", 1)
                meta[key.strip()] = value.strip()
            return meta, lines[end + 1 :]
    raise InvalidInput(f"{where}: frontmatter opened with --- is never closed")


def _inline_meta(line: str) -> dict[str, str]:
    match = _META.match(line.strip())
    if not match:
        return {}
    return dict(part.split("=", 1) for part in match.group(1).split() if "=" in part)


def parse_markdown(text: str, source: str) -> list[MemoryRecord]:
    """Markdown -> memory records (see the module docstring for the format)."""
    meta, lines = _frontmatter(text.splitlines(), source)
    defaults: dict[str, Any] = {"kind": "fact", "project": "", "tags": ()}
    defaults = _apply_meta(meta, defaults, source, MEMORY_FIELDS)
    sections: list[tuple[str, list[str]]] = []
    preamble: list[str] = []
    for line in lines:
        if line.startswith("## "):
            sections.append((line[3:].strip(), []))
        elif sections:
            sections[-1][1].append(line)
        else:
            preamble.append(line)
    if not sections:
        sections = [("", preamble)]
    records = []
    for title, body_lines in sections:
        where = f"{source}: section {title!r}" if title else source
        values = dict(defaults)
        kept = []
        for line in body_lines:
            inline = _inline_meta(line)
            if inline:
                values = _apply_meta(inline, values, where, SECTION_FIELDS)
            else:
                kept.append(line)
        body = "\n".join(kept).strip()
        if not body:
            if title:
                raise InvalidInput(f"{where}: section has no text")
            continue
        records.append(MemoryRecord(body=body, title=title, **values))
    return records


def render_markdown(project: str, memories: list[Memory]) -> str:
    """One project's memories as a re-importable Markdown document."""
    out = ["---", f"project: {json.dumps(project, ensure_ascii=False)}", "---", ""]
    for memory in memories:
        meta = [f"kind={memory.kind}", f"importance={memory.importance}", f"id={memory.id}"]
        if memory.tags:
            meta.append("tags=" + ",".join(t.replace(" ", "_") for t in memory.tags))
        if memory.evidence:
            meta.append("evidence=" + ",".join(memory.evidence))
        title = " ".join(memory.title.split()) or memory.id
        out += [f"## {title}", f"<!-- mnemoweave: {' '.join(meta)} -->", memory.body, ""]
    return "\n".join(out)


def line_key(record: Turn, position: int) -> str:
    """Dedup key of an imported turn without a timestamp: its place in the import."""
    return fingerprint(record.session, record.role, position, record.text)


def turn_line(turn: Turn) -> str:
    """A turn as a JSONL line (a time outside 1970..2200, stored before times were checked,
    is written as null: never -Infinity, which is not JSON)."""
    return json.dumps(
        {
            "session": turn.session,
            "role": turn.role,
            "text": turn.text,
            "ts": turn.ts if sane_time(turn.ts) else None,
            "host": turn.host,
            "project": turn.project,
            "key": turn.key,
        },
        ensure_ascii=False,
    )


def project_filename(project: str) -> str:
    """A safe file name for a project's export (the real name lives in the frontmatter)."""
    if not project:
        return "global.md"
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", project).strip("-.")[:40] or "project"
    return f"project-{slug}-{fingerprint(project)[:8]}.md"


SUFFIXES = (".md", ".markdown", ".jsonl")
MAX_IMPORT_BYTES = 32 * 2**20  # what one import reads in all (a daemon request holds 64 MB)


def _read(path: Path, budget: int) -> str:
    """A regular file's text: FIFOs and devices are refused without reading (a FIFO would
    hang, /dev/zero never ends), and so is a file over `budget` bytes."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as exc:
        raise InvalidInput(f"cannot read {path}: {exc.strerror or exc}") from None
    with os.fdopen(fd, "rb") as file:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise InvalidInput(f"{path}: not a regular file (FIFOs and devices are not imported)")
        data = file.read(max(budget, 0) + 1)
    if len(data) > budget:
        raise InvalidInput(
            f"{path}: the import is over {MAX_IMPORT_BYTES // 2**20} MB; import it in parts"
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidInput(f"cannot read {path}: {exc}") from None


def parse_named(name: str, text: str) -> list[Turn | MemoryRecord]:
    """Parse a file's text by the suffix of its name (.jsonl turns, .md memories)."""
    suffix = os.path.splitext(name)[1].lower()
    if suffix not in SUFFIXES:
        raise InvalidInput(
            f"{name}: unsupported file type (use .jsonl for turns, .md for memories)"
        )
    if suffix == ".jsonl":
        return list(parse_jsonl(text, name))
    return list(parse_markdown(text, name))


def read_source(path: Path, budget: int) -> list[Turn | MemoryRecord]:
    """Parse one file by its suffix (.jsonl turns, .md memories), at most `budget` bytes."""
    parse_named(str(path), "")  # an unsupported suffix is refused before anything is read
    return parse_named(str(path), _read(path, budget))


def collect(path: Path) -> list[Turn | MemoryRecord]:
    """Every record under a file or directory (directories: *.md and *.jsonl, sorted, but
    not the notes an export writes under graph/: the graph is read from the memories), at
    most MAX_IMPORT_BYTES in all. A symlink in a directory that leads out of it is refused."""
    if not path.is_dir():
        if not path.exists():
            raise InvalidInput(f"{path}: no such file or directory")
        return read_source(path, MAX_IMPORT_BYTES)
    root = path.resolve()
    files = sorted(
        p
        for p in path.rglob("*")
        if p.suffix in SUFFIXES and not p.is_dir() and p.relative_to(path).parts[0] != "graph"
    )
    if not files:
        raise InvalidInput(f"{path}: no .md or .jsonl files to import")
    records: list[Turn | MemoryRecord] = []
    budget = MAX_IMPORT_BYTES
    for file in files:
        target = file.resolve()
        if not target.is_relative_to(root):
            raise InvalidInput(f"{file}: a link to {target}, outside {path}; not imported")
        records += read_source(file, budget)
        budget -= target.stat().st_size
    return records
