"""Turning turns into memory: classify each turn, distill candidate cards quoted from their
evidence, and the agent's review of them.

`classify.py` gives a turn its kind, `statements.py` cuts a turn into the sentences a card
may quote and `worth.py` says which are worth a card; `distill.py` walks undistilled turns
into pending cards; `conflicts.py` finds a memory a new one clashes with; `review.py` is
the review (accept, edit, reject, supersede, feedback, evidence); `skills.py` and
`skill_queue.py` keep the procedures the agent saves on purpose.
"""
