"""The built-in distiller (learn.distill's extractive one, registered as "extractive"), and
distilling a session when it pauses, is compacted or ends."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mnemoweave.hookspecs import hookimpl
from mnemoweave.learn.distill import extractive

if TYPE_CHECKING:
    from mnemoweave.engine import Engine
    from mnemoweave.model import SessionEvent


@hookimpl
def register_distillers(register: Any) -> None:
    register("extractive", extractive)


def _session_paused(event: SessionEvent, engine: Engine) -> None:
    engine.distill(session=event.session)


on_session_idle = hookimpl(_session_paused)
on_pre_compact = hookimpl(_session_paused)
on_session_end = hookimpl(_session_paused)
