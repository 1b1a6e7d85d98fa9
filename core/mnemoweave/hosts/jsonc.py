"""Editing one member of a JSON (or JSON with comments) settings file in place.

Editors' settings files are written by people: Zed's holds comments and trailing commas,
and every file has its owner's layout. `put` and `drop` change one member of an object
(our MCP server entry) and leave every other byte as it was, so a comment, an order or an
indentation survives an install and an uninstall. Plain JSON stays plain JSON: a comma is
added only where a member follows.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from mnemoweave.errors import InvalidInput

_TOKEN = re.compile(
    r'"(?:[^"\\]|\\.)*"'  # a string
    r"|//[^\n]*|/\*.*?\*/"  # a comment
    r"|[{}\[\]:,]"  # punctuation
    r"|[^\s{}\[\]:,\"/]+",  # a number, true, false, null
    re.DOTALL,
)


@dataclass
class Node:
    """A value's span; an object's members by key: (key start, value)."""

    start: int
    end: int
    members: dict[str, tuple[int, Node]] = field(default_factory=dict)
    is_object: bool = False


def _tokens(text: str) -> list[tuple[str, int, int]]:
    out, at = [], 0
    for match in _TOKEN.finditer(text):
        if text[at : match.start()].strip():
            raise ValueError(f"unexpected {text[at : match.start()].strip()[:20]!r} at {at}")
        at = match.end()
        token = match.group()
        if not token.startswith(("//", "/*")):
            out.append((token, match.start(), match.end()))
    if text[at:].strip():
        raise ValueError(f"unexpected {text[at:].strip()[:20]!r} at {at}")
    return out


def _value(tokens: list[tuple[str, int, int]], k: int) -> tuple[Node, int]:
    token, start, end = tokens[k]
    if token not in ("{", "["):
        if token in "}]:,":
            raise ValueError(f"unexpected {token!r} at {start}")
        json.loads(token)  # a string or a literal that JSON reads
        return Node(start, end), k + 1
    close, node, k = "}" if token == "{" else "]", Node(start, end, is_object=token == "{"), k + 1
    while tokens[k][0] != close:
        if node.is_object:
            key, key_start, _ = tokens[k]
            if not key.startswith('"') or tokens[k + 1][0] != ":":
                raise ValueError(f"expected a key at {key_start}")
            value, k = _value(tokens, k + 2)
            node.members[json.loads(key)] = (key_start, value)
        else:
            _, k = _value(tokens, k)
        if tokens[k][0] == ",":
            k += 1
        elif tokens[k][0] != close:
            raise ValueError(f"expected ',' or {close!r} at {tokens[k][1]}")
    node.end = tokens[k][2]
    return node, k + 1


def parse(text: str, path: object) -> Node:
    """The top-level object of a settings file's text ('' is an empty object)."""
    try:
        tokens = _tokens(text)
        if not tokens:
            return Node(0, 0, is_object=True)
        node, k = _value(tokens, 0)
        if k != len(tokens) or not node.is_object:
            raise ValueError("the file is not one object")
    except (ValueError, IndexError) as exc:
        raise InvalidInput(f"{path} is not valid JSON ({exc}); fix it first") from None
    return node


def value(text: str, node: Node) -> Any:
    """A node's value (comments and trailing commas dropped)."""
    kept = "".join(t for t, _, _ in _tokens(text[node.start : node.end]))
    return json.loads(re.sub(r",([}\]])", r"\1", kept))


def put(text: str, path: object, where: tuple[str, str], new: Any) -> str:
    """The text with `new` as member where[1] of the object under key where[0] of the top
    object (both made when missing)."""
    top = parse(text, path)
    outer, name = where
    if not text.strip():
        return json.dumps({outer: {name: new}}, indent=2, ensure_ascii=False) + "\n"
    if outer not in top.members:
        return _insert(text, top, outer, {name: new}, "  ")
    servers = top.members[outer][1]
    if not servers.is_object:
        raise InvalidInput(f"{path}: {outer} is not an object; fix it first")
    if name in servers.members:
        node = servers.members[name][1]
        if value(text, node) == new:
            return text
        said = json.dumps(new, ensure_ascii=False)
        return text[: node.start] + said + text[node.end :]
    return _insert(text, servers, name, new, "    ")


def _insert(text: str, node: Node, key: str, new: Any, indent: str) -> str:
    member = f"\n{indent}{json.dumps(key)}: {json.dumps(new, ensure_ascii=False)}"
    comma = "," if node.members else ""
    opened = node.start + 1
    return text[:opened] + member + comma + text[opened:]


def drop(text: str, path: object, where: tuple[str, str]) -> str:
    """The text without member where[1] of the object under where[0] (and without that
    object when it held only it)."""
    top = parse(text, path)
    outer, name = where
    if outer not in top.members or name not in top.members[outer][1].members:
        return text
    servers = top.members[outer][1]
    if len(servers.members) == 1:
        return _remove(text, top, outer)
    return _remove(text, servers, name)


def _remove(text: str, node: Node, key: str) -> str:
    """The text without one member of `node` and the comma that joined it to the others."""
    start, member = node.members[key]
    end = member.end
    line = text.rfind("\n", node.start, start)
    if line != -1 and not text[line:start].strip():
        start = line  # the member's line goes with it
    after = re.match(r"[ \t]*,", text[end:])
    if after:
        end += after.end()
    else:  # the last member: the comma before it goes
        before = text.rfind(",", node.start, start)
        if before != -1 and not text[before + 1 : start].strip(" \t\r\n"):
            start = before
    rest = text[:start] + text[end:]
    return "" if not parse(rest, "").members and not _comments(rest) else rest


def _comments(text: str) -> bool:
    return any(t.startswith(("//", "/*")) for t in _TOKEN.findall(text))
