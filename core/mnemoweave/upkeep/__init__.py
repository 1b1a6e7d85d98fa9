"""Keeping memory sound and tidy: the trash, the hygiene report and consolidation, index
repair, `status` and `doctor`, and encrypted backups.

`trash.py` (forget, restore, purge), `bulk.py` (memories chosen by tag or words),
`hygiene.py` (what could be tidied), `consolidate.py` (tidy in runs a person can undo),
`indexing.py` (drift checks, repair, reindex), `projects.py` (list and rename projects),
`health.py` (`status`, `doctor`) and `backup.py` (backup and restore).
"""
