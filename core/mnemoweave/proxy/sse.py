"""Server-sent events, read incrementally: bytes in as they arrive, (event, data) out."""

from __future__ import annotations

from collections.abc import Iterator


class Events:
    """An event-stream parser fed chunk by chunk (chunks may split lines anywhere)."""

    def __init__(self) -> None:
        self._rest = b""
        self._event = ""
        self._data: list[str] = []

    def feed(self, chunk: bytes) -> Iterator[tuple[str, str]]:
        """The events completed by `chunk`, in order."""
        lines = (self._rest + chunk).split(b"\n")
        self._rest = lines.pop()
        for raw in lines:
            line = raw.rstrip(b"\r").decode("utf-8", "replace")
            if not line:
                if self._data:
                    yield self._event, "\n".join(self._data)
                self._event, self._data = "", []
                continue
            name, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if name == "event":
                self._event = value
            elif name == "data":
                self._data.append(value)
