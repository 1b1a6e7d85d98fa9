"""The wire format: the records the Engine returns, as plain JSON and back.

A record (a model.py dataclass, Written, Weave, Skill, health's Check) travels as an object
of its fields plus "_type", its class name. Times stay epoch floats (JSON floats round-trip
exactly), tuples become arrays and paths absolute path strings (a relative path means
nothing to another process). `decode` rebuilds the same objects, so whoever calls the
daemon gets back what the Engine returns in-process.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from functools import cache
from importlib import import_module
from pathlib import Path, PurePath
from typing import Any

TYPE = "_type"
# record class name -> the module (under mnemoweave) that defines it, imported on first use
RECORDS = {
    "Turn": "model",
    "SessionEvent": "model",
    "Memory": "model",
    "Hit": "model",
    "Classification": "model",
    "Card": "model",
    "Line": "model",
    "Block": "model",
    "Written": "capture.writes",
    "Weave": "recall.weave",
    "Skill": "learn.skills",
    "Check": "upkeep.health",
    "MemoryRecord": "capture.file_formats",
}


def record_class(name: str) -> type:
    if name not in RECORDS:
        raise ValueError(f"unknown record type {name!r}")
    found: type = getattr(import_module(f"mnemoweave.{RECORDS[name]}"), name)
    return found


@cache
def field_types(cls: type) -> dict[str, Any]:
    """A record's fields and their types (annotations resolved in the record's module)."""
    return typing.get_type_hints(cls)


def encode(value: Any) -> Any:
    """Plain JSON data for a result or an argument."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        name = type(value).__name__
        if name not in RECORDS:
            raise TypeError(f"{name} is not a wire record")
        out: dict[str, Any] = {TYPE: name}
        for f in dataclasses.fields(value):
            out[f.name] = encode(getattr(value, f.name))
        return out
    if isinstance(value, dict):
        return {str(key): encode(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [encode(item) for item in value]
    if isinstance(value, PurePath):
        return str(Path(value).absolute())
    if value is None or isinstance(value, str | int | float):
        return value
    raise TypeError(f"cannot send a {type(value).__name__} over the wire")


def decode(value: Any) -> Any:
    """The objects `encode` was given (paths come back as strings)."""
    if isinstance(value, list):
        return [decode(item) for item in value]
    if not isinstance(value, dict):
        return value
    if TYPE not in value:
        return {key: decode(item) for key, item in value.items()}
    cls = record_class(value[TYPE])
    hints = field_types(cls)
    return cls(
        **{
            f.name: _shape(decode(value[f.name]), hints[f.name])
            for f in dataclasses.fields(cls)
            if f.name in value
        }
    )


def _shape(value: Any, hint: Any) -> Any:
    """Arrays back into the tuples a field's type asks for, at any depth."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is tuple and isinstance(value, list):
        return tuple(_shape(item, args[0]) for item in value)
    if origin is dict and isinstance(value, dict) and len(args) == 2:
        return {key: _shape(item, args[1]) for key, item in value.items()}
    if origin in (typing.Union, types.UnionType) and value is not None:
        options = [arg for arg in args if arg is not type(None)]
        return _shape(value, options[0]) if len(options) == 1 else value
    return value
