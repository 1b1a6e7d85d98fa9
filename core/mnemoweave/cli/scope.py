"""The --project / --global options: every command that takes a scope reads it the same
way (see scope.py)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import click

Command = Callable[..., Any]


def scope_options(function: Command) -> Command:
    """Add --project PATH|KEY and --global; the command gets `project`: the scope's key
    ('' for global; by default the project of the working directory)."""
    return _scoped(function, here_by_default=True)


def rescope_options(function: Command) -> Command:
    """The same options for changing a scope: `project` is None when neither is given."""
    return _scoped(function, here_by_default=False)


def _scoped(function: Command, here_by_default: bool) -> Command:
    @click.option(
        "--project",
        "-p",
        "project_arg",
        metavar="PATH|KEY",
        help="This project: a path in it (such as .) or its key"
        + (" (default: the project of the working directory)." if here_by_default else "."),
    )
    @click.option("--global", "global_scope", is_flag=True, help="The global scope.")
    @functools.wraps(function)
    def scoped(*args: Any, project_arg: str | None, global_scope: bool, **kwargs: Any) -> Any:
        from mnemoweave.scope import resolve_scope

        given = here_by_default or project_arg or global_scope
        project = resolve_scope(project_arg, global_scope) if given else None
        return function(*args, project=project, **kwargs)

    return scoped
