"""`python -m mnemoweave`: the CLI, for when the console script is not on PATH."""

from .cli import main

main()
