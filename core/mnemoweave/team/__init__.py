"""Team memory on a Chroma server: what a member shares, how it travels, how it is read.

`server.py` (the team's collection), `outbox.py` (publishing and retracting),
`mirror.py` (the local copy hooks read), `sync.py` (one sync, its state and `status`),
`search.py` and `plugin.py` (team hits in search and team lines in the weave); the team's
server, `mnemoweave team serve`: `service.py` (Chroma behind a token check), `members.py`
(one token each) and `records.py` (a team's records). Importing this package loads nothing:
chromadb is imported when a server is first used.
"""
