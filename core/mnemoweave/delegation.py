"""Engine operations that live in their own modules (review, health, skills, ...).

`Delegated("learn.skills.teach")` on the Engine class makes `engine.teach_skill(...)` call
`mnemoweave.learn.skills.teach(engine, ...)`, importing the module on first use: the Engine stays
the one facade every caller uses (the CLI, the MCP server, the daemon's routes, and
RemoteEngine, which has the same names), while each operation sits in the module named for
it and takes its dependencies explicitly.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any


class Delegated:
    """An Engine attribute that is `function(engine, ...)` of `module.function`."""

    def __init__(self, target: str) -> None:
        self.module, _, self.function = target.rpartition(".")

    def __get__(self, engine: Any, owner: type | None = None) -> Callable[..., Any]:
        # __import__, not importlib.import_module: `-X importtime` lists what it imports
        module = __import__(f"mnemoweave.{self.module}", fromlist=[self.function])
        function = getattr(module, self.function)
        if engine is None:
            return function  # on the class: the module's function, for its signature
        return functools.partial(function, engine)
