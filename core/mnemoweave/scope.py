"""The one scope rule, shared by the CLI and the MCP server: the project of the working
directory by default, the global scope ('') when asked, or the project a path or a key
names. The hooks follow the same default: the project of the payload's directory."""

from __future__ import annotations

import os
from typing import overload

from mnemoweave.errors import InvalidInput
from mnemoweave.projects import MAX_PROJECT, normalise_project, project_from_cwd


def resolve_scope(project: str | None = None, global_scope: bool = False) -> str:
    """The scope to work in: '' (global) for `global_scope`; for `project`, the key of the
    project a path names (`.`, `../app`, `~/src/app`, an existing dir) or the key itself;
    else the project of the working directory."""
    if global_scope and project:
        raise InvalidInput("give either a project or the global scope, not both")
    if global_scope:
        return ""
    base = os.getcwd()
    if not project:
        return project_from_cwd(base)
    value = os.path.expanduser(project.strip())
    path = os.path.abspath(os.path.join(base, value))
    if os.path.isdir(path):
        return project_from_cwd(path)
    if value.startswith((".", "/")):  # the path a project was named by before it moved
        return normalise_project(path)
    return value  # a key, as given (the store checks its length)


def project_name(value: str | None) -> str:
    """A project name with its whitespace collapsed; refused when longer than MAX_PROJECT."""
    name = " ".join((value or "").split())
    if len(name) > MAX_PROJECT:
        raise InvalidInput(f"a project name is at most {MAX_PROJECT} characters, got {len(name)}")
    return name


@overload
def visible(project: str) -> list[str]: ...
@overload
def visible(project: None) -> None: ...
def visible(project: str | None) -> list[str] | None:
    """The scopes a read of `project` sees: the project and the global scope ('' sees the
    global scope alone); None sees every project."""
    if project is None:
        return None
    name = project_name(project)
    return [name, ""] if name else [""]
