"""The store: everything on disk under the data dir, and the only code that runs SQL.

`db.py` opens SQLite (migrations in `migrations.py`, applied in a transaction on open) and
one module per table reads and writes it (`memories.py`, `turns.py`, `cards.py`, ...);
`fts.py` is the full-text index over jieba tokens, `vectors.py` the Chroma vector index,
`damage.py` and `quarantine.py` what is done with a damaged store, `private.py` the
owner-only modes of the data dir, and `spooled.py` the folder where hook payloads wait for
the daemon.
"""
