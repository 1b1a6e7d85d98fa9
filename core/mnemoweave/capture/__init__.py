"""What comes in: the write path and the files memory is imported from and exported to.

`writes.py` validates, cleans, embeds and writes turns and memories (SQLite first, then the
vector index), `capsule.py` keeps each session's rolling recap as turns arrive,
`file_formats.py` parses the JSONL and Markdown formats before anything is written, and
`import_export.py` imports all or nothing and exports the store.
"""
