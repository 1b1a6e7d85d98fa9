"""JSON Schema for the API: the field types routes declare, checking a request against
them, and the schemas of the wire records (derived from the dataclasses themselves).

Only the subset the routes use is checked: type (one or a list), enum and array items.
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from typing import Any

from mnemoweave.daemon.wire import RECORDS, TYPE, field_types, record_class
from mnemoweave.model import MEMORY_KINDS, ROLES

STR: dict[str, Any] = {"type": "string"}
OPT_STR: dict[str, Any] = {"type": ["string", "null"]}
_INT64 = {"minimum": -(2**63), "maximum": 2**63 - 1}  # what the store can hold
INT: dict[str, Any] = {"type": "integer", **_INT64}
OPT_INT: dict[str, Any] = {"type": ["integer", "null"], **_INT64}
OPT_NUM: dict[str, Any] = {"type": ["number", "null"]}
BOOL: dict[str, Any] = {"type": "boolean"}
STRS: dict[str, Any] = {"type": "array", "items": STR}
ANY: dict[str, Any] = {}
OBJECT: dict[str, Any] = {"type": "object"}


def one_of(*values: str, nullable: bool = False) -> dict[str, Any]:
    if nullable:
        return {"type": ["string", "null"], "enum": [*values, None]}
    return {"type": "string", "enum": list(values)}


OPT_KIND = one_of(*MEMORY_KINDS, nullable=True)
ROLE = one_of(*ROLES)


def ref(name: str) -> dict[str, Any]:
    return {"$ref": f"#/components/schemas/{name}"}


def array(items: dict[str, Any]) -> dict[str, Any]:
    return {"type": "array", "items": items}


# --- checking requests ---------------------------------------------------------------------

_CHECKS = {
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: (
        (isinstance(v, int) and not isinstance(v, bool))
        or (isinstance(v, float) and math.isfinite(v))
    ),  # NaN and infinities are not JSON
    "boolean": lambda v: isinstance(v, bool),
    "array": lambda v: isinstance(v, list),
    "object": lambda v: isinstance(v, dict),
    "null": lambda v: v is None,
}


def _types(schema: dict[str, Any]) -> list[str]:
    kind = schema.get("type", [])
    return [kind] if isinstance(kind, str) else list(kind)


def problem(name: str, value: Any, schema: dict[str, Any]) -> str | None:
    """Why `value` does not fit `schema` (None when it does)."""
    kinds = _types(schema)
    if kinds and not any(_CHECKS[kind](value) for kind in kinds):
        return f"{name}: expected {' or '.join(kinds)}, got {value!r}"
    number = isinstance(value, int | float) and not isinstance(value, bool)
    if number and not schema.get("minimum", value) <= value <= schema.get("maximum", value):
        return f"{name}: {value!r} is out of range"
    if "enum" in schema and value not in schema["enum"]:
        allowed = ", ".join(str(v) for v in schema["enum"] if v is not None)
        return f"{name}: {value!r} is not one of {allowed}"
    if isinstance(value, list) and "items" in schema:
        for position, item in enumerate(value):
            found = problem(f"{name}[{position}]", item, schema["items"])
            if found:
                return found
    return None


def from_text(name: str, text: str, schema: dict[str, Any]) -> Any:
    """A path or query parameter (always text) as the type its schema declares."""
    kinds = _types(schema)
    try:
        if "integer" in kinds:
            return int(text)
        if "number" in kinds:
            return float(text)
    except ValueError:
        return text  # left as text, so the check reports it
    if "boolean" in kinds and text.lower() in ("true", "false", "1", "0"):
        return text.lower() in ("true", "1")
    return text


# --- records (for OpenAPI) -----------------------------------------------------------------

_SIMPLE = {str: "string", int: "integer", float: "number", bool: "boolean", type(None): "null"}


def type_schema(hint: Any) -> dict[str, Any]:
    """The JSON Schema of a Python type as the wire carries it."""
    if hint in _SIMPLE:
        return {"type": _SIMPLE[hint]}
    if hint is Any:
        return {}
    if isinstance(hint, type) and hint.__name__ in RECORDS:
        return ref(hint.__name__)
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is tuple or origin is list:
        return array(type_schema(args[0]) if args else {})
    if origin is dict:
        return {"type": "object", "additionalProperties": type_schema(args[1]) if args else {}}
    if origin in (typing.Union, types.UnionType):
        options = [type_schema(arg) for arg in args]
        if all(set(option) == {"type"} for option in options):
            return {"type": [option["type"] for option in options]}
        return {"anyOf": options}
    raise TypeError(f"no JSON Schema for {hint!r}")


def record_schema(name: str) -> dict[str, Any]:
    cls = record_class(name)
    hints = field_types(cls)
    names = [f.name for f in dataclasses.fields(cls)]
    return {
        "type": "object",
        "description": (cls.__doc__ or name).strip().splitlines()[0],
        "properties": {TYPE: {"const": name}} | {n: type_schema(hints[n]) for n in names},
        "required": [TYPE, *names],
    }
