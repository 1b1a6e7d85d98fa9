"""The built-in weave tiers (recall.weave): the session's scene, the knowledge a prompt
needs, and the nudges."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mnemoweave.hookspecs import hookimpl
from mnemoweave.recall.knowledge import knowledge_blocks
from mnemoweave.recall.weave import nudge_block, scene_block

if TYPE_CHECKING:
    from mnemoweave.engine import Engine
    from mnemoweave.model import Block


@hookimpl
def weave_blocks(
    engine: Engine, query: str, session: str | None, project: str | None
) -> list[Block]:
    """The built-in tiers: the session's scene, relevant knowledge, always-on nudges."""
    blocks = [
        *knowledge_blocks(engine, query, session, project),
        nudge_block(engine, project),
        scene_block(engine, session, project),
    ]
    return [block for block in blocks if block is not None]
