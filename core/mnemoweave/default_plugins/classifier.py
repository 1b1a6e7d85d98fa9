"""The built-in classifier: rules and a lexicon (learn.classify), registered as "builtin"."""

from __future__ import annotations

from typing import Any

from mnemoweave.hookspecs import hookimpl
from mnemoweave.learn.classify import classify


@hookimpl
def register_classifiers(register: Any) -> None:
    """The built-in rules-and-lexicon classifier, as "builtin"."""
    register("builtin", lambda turn: classify(turn.text, turn.role))
