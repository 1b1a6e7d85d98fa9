"""The projects a store holds: listed with their rows, and renamed (`mnemoweave project list`
and `project rename`) when a checkout moved or a repository was renamed."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mnemoweave.projects import display_name, normalise_project

if TYPE_CHECKING:
    from mnemoweave.engine import Engine


def listing(engine: Engine) -> list[dict[str, Any]]:
    """Every project the store holds (the global scope too), with its key, readable name
    and rows per table."""
    from mnemoweave.store import projects

    return [
        {"key": key, "name": display_name(key), **counts}
        for key, counts in projects.counts(engine.db).items()
    ]


def rename(engine: Engine, old: str, new: str) -> dict[str, Any]:
    """Move everything of project `old` (its key as `listing` shows it) to `new`, merging
    when `new` already holds rows: for a checkout that moved or a repository renamed."""
    from mnemoweave.errors import InvalidInput, NotFound
    from mnemoweave.store import audit, projects
    from mnemoweave.store.db import transaction

    old, new = normalise_project(old), normalise_project(new)
    if not new or old == new:
        raise InvalidInput(f"rename {old!r} to another project key, got {new!r}")
    with transaction(engine.db) as db:
        moved = projects.rename(db, old, new)
        if not moved:
            raise NotFound(f"no project {old!r} (see `mnemoweave project list`)")
        audit.record(db, "rename-project", old, {"project": old}, {"project": new})
    for channel in engine.channels:
        for table in ("memories", "turns"):
            channel.index.move(table, old, new)
    return {"old": old, "new": new, "rows": moved}
