"""File formats for import and export: JSONL turns and Markdown memories.

Parsing is pure (text in, plain records out) so a bad file is refused before anything is
written. Markdown is the common note format: a note is one memory. Its YAML frontmatter
may give `title`, `tags` (a list or a comma-separated string), `importance` (1-5) or
`weight` (1-5, or 0-1 scaled onto 1-5), `created`, `updated` (ISO 8601, a date, or epoch
seconds), `kind` and `project`; another field is ignored with a warning. Without a `title`,
a first `# H1` line is the title. Split (`import --split`), each `## ` section is a memory
titled by its heading (the text before the first, if any, is one too), and an HTML comment
line `<!-- mnemoweave: kind=pref importance=4 tags=a,b -->` under a heading overrides the
note's fields for it: the per-project files `export` writes are read that way always.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any, TypeVar

from mnemoweave.errors import InvalidInput
from mnemoweave.model import (
    MEMORY_KINDS,
    Memory,
    Turn,
    check_kind,
    check_role,
    check_time,
    sane_time,
)
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
    created: float | None = None  # epoch seconds; None: when it is imported
    updated: float | None = None


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
# what a section's `<!-- mnemoweave: ... -->` comment may set (id: not kept)
SECTION_FIELDS = ("kind", "project", "tags", "importance", "evidence", "id")


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
NOTE_FIELDS = ("title", "tags", "weight", "importance", "created", "updated", "kind", "project")
EXPORT_ONLY = ("id",)  # written by `export --per-memory`, not kept (a store numbers its own)


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


def _frontmatter(lines: list[str], where: str) -> tuple[dict[str, Any], list[str]]:
    """The YAML frontmatter between `---` lines, and the lines after it."""
    import yaml

    if not lines or lines[0].strip() != "---":
        return {}, lines
    for end in range(1, len(lines)):
        if lines[end].strip() == "---":
            try:
                meta = yaml.safe_load("\n".join(lines[1:end])) or {}
            except yaml.YAMLError as exc:
                said = " ".join(str(exc).split())
                raise InvalidInput(f"{where}: the frontmatter is not YAML ({said})") from None
            if not isinstance(meta, dict):
                raise InvalidInput(f"{where}: the frontmatter is not a set of 'key: value' lines")
            return {str(key): value for key, value in meta.items()}, lines[end + 1 :]
    raise InvalidInput(f"{where}: frontmatter opened with --- is never closed")


def _note_fields(meta: dict[str, Any], where: str, warn: Callable[[str], None]) -> dict[str, Any]:
    """A note's frontmatter as memory fields; unknown fields are ignored with a warning."""
    unknown = sorted(set(meta) - set(NOTE_FIELDS) - set(EXPORT_ONLY))
    if unknown:
        warn(f"{where}: ignored field(s) {', '.join(repr(name) for name in unknown)}")
    out: dict[str, Any] = {}
    for name, value in meta.items():
        if value is None or name not in NOTE_FIELDS:
            continue
        if name in ("title", "project", "kind"):
            if not isinstance(value, str | int | float) or isinstance(value, bool):
                raise InvalidInput(f"{where}: {name} must be text, got {value!r}")
            out[name] = str(value).strip()
        elif name == "tags":
            out["tags"] = _tags(value, where)
        elif name in ("weight", "importance"):
            out["importance"] = _importance(value, where)
        else:  # created, updated
            out[name] = parse_time(_iso(value), f"{where}: {name}")
    if "kind" in out:
        out["kind"] = _note_kind(out["kind"], where, warn)
    return out


# what other note tools call the kinds (a kind no one knows is a fact, with a warning)
KIND_NAMES = {
    "preference": "pref", "rule": "pref", "convention": "pref", "person": "pers",
    "persona": "pers", "profile": "pers", "goal": "mission", "task": "mission",
    "decision": "conclusion", "pitfall": "conclusion", "lesson": "conclusion",
    "finding": "conclusion", "note": "fact", "procedure": "skill", "howto": "skill",
}  # fmt: skip


def _note_kind(kind: str, where: str, warn: Callable[[str], None]) -> str:
    named = kind.strip().lower()
    if named in MEMORY_KINDS:
        return named
    if named in KIND_NAMES:
        return KIND_NAMES[named]
    warn(f"{where}: kind {kind!r} is none of {', '.join(MEMORY_KINDS)}; imported as fact")
    return "fact"


def _tags(value: Any, where: str) -> tuple[str, ...]:
    """A list of tags, or one comma-separated string of them ('#' prefixes dropped)."""
    items = value if isinstance(value, list) else str(value).split(",")
    tags = (str(item).strip().lstrip("#").strip() for item in items if item is not None)
    return tuple(tag for tag in tags if tag)


def _importance(value: Any, where: str) -> int:
    """1-5 as given; a weight between 0 and 1 (0.8) is scaled onto 1-5."""
    if isinstance(value, str):
        with contextlib.suppress(ValueError):
            value = float(value) if "." in value else int(value)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidInput(f"{where}: importance (or weight) must be 1-5, got {value!r}")
    if isinstance(value, float) and 0 <= value <= 1:
        return 1 + round(4 * value)
    if value != int(value) or not 1 <= value <= 5:
        raise InvalidInput(f"{where}: importance (or weight) must be 1-5, got {value!r}")
    return int(value)


def _iso(value: Any) -> Any:
    """YAML reads `2024-05-01` as a date and `2024-05-01 10:00` as a naive datetime: both
    are UTC here, and go on as ISO text; anything else as it is."""
    if isinstance(value, datetime):
        return (value if value.tzinfo else value.replace(tzinfo=UTC)).isoformat()
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day, tzinfo=UTC).isoformat()
    return value


def _ignore(_: str) -> None:
    return None


def parse_markdown(
    text: str, source: str, *, split: bool = False, warn: Callable[[str], None] = _ignore
) -> list[MemoryRecord]:
    """A note (see the module docstring) -> memory records: one for the note, or with
    `split` one per `## ` section (an export of mnemoweave's is always split)."""
    meta, lines = _frontmatter(text.removeprefix("\ufeff").splitlines(), source)
    defaults: dict[str, Any] = {"kind": "fact", "project": "", "tags": ()}
    defaults |= _note_fields(meta, source, warn)
    title = defaults.pop("title", "")
    if not split and not any(_META.match(line.strip()) for line in lines):
        heading, body = _heading(lines)
        return [MemoryRecord(body, title or heading, **defaults)] if body else _empty(source)
    preamble: list[str] = []
    sections: list[tuple[str, list[str]]] = []
    fenced = False  # a "## " line inside a fenced code block is code, not a heading
    for line in lines:
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
        if line.startswith("## ") and not fenced:
            sections.append((line[3:].strip(), []))
        elif sections:
            sections[-1][1].append(line)
        else:
            preamble.append(line)
    heading, body = _heading(preamble)
    if body and not any(_META.match(line.strip()) for line in lines):
        sections.insert(0, (title or heading, body.splitlines()))
    records = []
    for heading, body_lines in sections:
        where = f"{source}: section {heading!r}" if heading else source
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
            raise InvalidInput(f"{where}: section has no text")
        records.append(MemoryRecord(body=body, title=heading, **values))
    return records or _empty(source)


def _heading(lines: list[str]) -> tuple[str, str]:
    """A `# H1` first line (the note's title when its frontmatter has none) and the rest."""
    text = "\n".join(lines).strip()
    first, _, rest = text.partition("\n")
    if first.startswith("# "):
        return first[2:].strip(), rest.strip()
    return "", text


def _empty(source: str) -> list[MemoryRecord]:
    """Refuse a note with no text (typed as its parser's result, where it is returned)."""
    raise InvalidInput(f"{source}: the note has no text")


def _inline_meta(line: str) -> dict[str, str]:
    match = _META.match(line.strip())
    if not match:
        return {}
    return dict(part.split("=", 1) for part in match.group(1).split() if "=" in part)


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


def _utc(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).isoformat().replace("+00:00", "Z")


def render_note(memory: Memory) -> str:
    """One memory as a note in the common format (frontmatter, then its text), read back
    by the import as the same memory."""
    fields = {
        "id": memory.id,
        "kind": memory.kind,
        "title": " ".join(memory.title.split()),
        "tags": list(memory.tags),
        "importance": memory.importance,
        "created": _utc(memory.created),
        "updated": _utc(memory.updated),
        "project": memory.project,
    }
    lines = [f"{name}: {json.dumps(value, ensure_ascii=False)}" for name, value in fields.items()]
    return "\n".join(["---", *lines, "---", "", memory.body, ""])


def note_filename(memory: Memory) -> str:
    """`m_12-upload-timeout.md`: the id keeps it unique, the title's words make it readable."""
    words = re.sub(r"[^\w]+", "-", memory.title.lower()).strip("-_")[:50].strip("-_")
    return f"{memory.id}-{words}.md" if words else f"{memory.id}.md"


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


def parse_named(
    name: str, text: str, *, split: bool = False, warn: Callable[[str], None] = _ignore
) -> list[Turn | MemoryRecord]:
    """Parse a file's text by the suffix of its name (.jsonl turns, .md memories)."""
    if _suffix(name) == ".jsonl":
        return list(parse_jsonl(text, name))
    return list(parse_markdown(text, name, split=split, warn=warn))


def _suffix(name: str) -> str:
    suffix = os.path.splitext(name)[1].lower()
    if suffix not in SUFFIXES:
        raise InvalidInput(
            f"{name}: unsupported file type (use .jsonl for turns, .md for memories)"
        )
    return suffix


@dataclass
class Collected:
    """What an import read: its records, and what it said of the files (a warning, or a
    file left out and why)."""

    records: list[Turn | MemoryRecord] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def collect(path: Path, split: bool = False) -> Collected:
    """Every record under a file or directory (directories: *.md and *.jsonl, sorted, but
    not the notes an export writes under graph/: the graph is read from the memories), at
    most MAX_IMPORT_BYTES in all. In a directory a file that cannot be read is left out and
    named in `problems`, and the rest is read; a lone file that cannot be read is refused,
    and so is a symlink in a directory that leads out of it."""
    found = Collected()
    if not path.is_dir():
        if not path.exists():
            raise InvalidInput(f"{path}: no such file or directory")
        _suffix(str(path))  # an unsupported suffix is refused before anything is read
        text = _read(path, MAX_IMPORT_BYTES)
        found.records = parse_named(str(path), text, split=split, warn=found.problems.append)
        return found
    root = path.resolve()
    files = sorted(
        p
        for p in path.rglob("*")
        if p.suffix in SUFFIXES and not p.is_dir() and p.relative_to(path).parts[0] != "graph"
    )
    if not files:
        raise InvalidInput(f"{path}: no .md or .jsonl files to import")
    budget = MAX_IMPORT_BYTES
    for file in files:
        target = file.resolve()
        if not target.is_relative_to(root):
            raise InvalidInput(f"{file}: a link to {target}, outside {path}; not imported")
        if target.is_file() and target.stat().st_size > budget:
            raise InvalidInput(
                f"{file}: the import is over {MAX_IMPORT_BYTES // 2**20} MB; import it in parts"
            )
        try:
            text = _read(file, budget)
            budget -= len(text.encode("utf-8"))
            found.records += parse_named(str(file), text, split=split, warn=found.problems.append)
        except InvalidInput as exc:
            found.problems.append(f"not imported: {exc}")
    return found
