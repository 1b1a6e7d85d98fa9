"""mnemoweave: local long-term memory for coding agents.

Importing the package stays cheap (no typing, no third-party modules): everything heavy
loads when first used.
"""

from __future__ import annotations

__version__ = "0.1.0"
__all__ = ["Engine", "__version__", "hookimpl"]

TYPE_CHECKING = False
if TYPE_CHECKING:
    from mnemoweave.engine import Engine
    from mnemoweave.hookspecs import hookimpl


def __getattr__(name: str) -> object:
    if name == "Engine":
        from mnemoweave.engine import Engine

        return Engine
    if name == "hookimpl":  # what a plugin marks its hook implementations with
        from mnemoweave.hookspecs import hookimpl

        return hookimpl
    raise AttributeError(f"module 'mnemoweave' has no attribute {name!r}")
