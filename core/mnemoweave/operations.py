"""Operations kept in modules (skills, hygiene) rather than on the Engine, made remotable.

Such a function takes the engine first. Given a proxy engine (one with `call_operation`,
which runs operations where the store is) it hands the call over, named "module.function";
given the Engine it runs here.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])


def remotable(function: F) -> F:
    name = f"{function.__module__.rpartition('.')[2]}.{function.__name__}"

    @functools.wraps(function)
    def operation(engine: Any, *args: Any, **kwargs: Any) -> Any:
        call = getattr(engine, "call_operation", None)
        if call is not None:
            return call(name, *args, **kwargs)
        return function(engine, *args, **kwargs)

    operation.operation = name  # type: ignore[attr-defined]
    return operation  # type: ignore[return-value]
