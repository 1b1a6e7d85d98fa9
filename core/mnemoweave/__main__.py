"""`python -m mnemoweave`: the program, for when the console script is not on PATH."""

from mnemoweave.entry import main

main()
