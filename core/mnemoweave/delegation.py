"""Engine operations that live in their own modules (review, health, skills, ...).

`teach_skill = Delegated(lambda: _skills.teach)` on the Engine class makes
`engine.teach_skill(...)` call `mnemoweave.learn.skills.teach(engine, ...)`, typed as that
function is (without its first argument): a wrong call fails the type check. The Engine
stays the one facade every caller uses (the CLI, the MCP server, the daemon's routes, and
RemoteEngine, which has the same names), while each operation sits in the module named for
it and takes its dependencies explicitly. `later` gives those modules, imported on first
use, so that importing the engine stays cheap.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, Concatenate, Generic, ParamSpec, TypeVar, overload

P = ParamSpec("P")
R = TypeVar("R")


class Delegated(Generic[P, R]):
    """An Engine attribute that is `function(engine, ...)`, the function found on first use."""

    def __init__(self, find: Callable[[], Callable[Concatenate[Any, P], R]]) -> None:
        self._find = find

    @overload
    def __get__(self, engine: None, owner: type) -> Callable[Concatenate[Any, P], R]: ...

    @overload
    def __get__(self, engine: object, owner: type | None = None) -> Callable[P, R]: ...

    def __get__(self, engine: object, owner: type | None = None) -> Callable[..., R]:
        function = self._find()
        if engine is None:
            return function  # on the class: the module's function, for its signature
        return functools.partial(function, engine)


class _Later:
    """A module imported when one of its attributes is first read."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str) -> Any:
        # __import__, not importlib.import_module: `-X importtime` lists what it imports
        return getattr(__import__(self._name, fromlist=[attr]), attr)


def later(*names: str) -> tuple[Any, ...]:
    """The modules `names`, each imported when first used."""
    return tuple(_Later(name) for name in names)
