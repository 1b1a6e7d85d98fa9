"""The built-in embedding models, registered through the same hook third-party models use."""

from __future__ import annotations

from collections.abc import Callable

from mnemoweave.embed import e5, use_m3
from mnemoweave.embed.artifacts import is_built
from mnemoweave.embed.base import EmbedderSpec
from mnemoweave.hookspecs import hookimpl


@hookimpl
def register_embedders(register: Callable[[EmbedderSpec], None]) -> None:
    """use-m3 (portable, strong cross-lingual) and e5-small (4-bit, fetched from PyPI)."""
    for model in (use_m3, e5):
        register(
            EmbedderSpec(
                name=model.NAME,
                dim=model.DIM,
                description=model.DESCRIPTION,
                build=model.build,
                load=model.load,
                is_built=is_built,
                relevant_cosine=model.RELEVANT_COSINE,
            )
        )
