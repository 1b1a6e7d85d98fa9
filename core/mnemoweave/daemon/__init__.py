"""The warm daemon (`mnemoweave serve`): one Engine behind an HTTP JSON API on a Unix socket.

`server` runs it (lock, socket, threads, signals, idle timer), `routes` is the route table
that dispatches requests and generates `openapi.json`, `remote` gives the CLI the same
Engine operations through it, `process` is the lock and pid file seen from outside;
`hooks` adds the hooks route (answer first, store after), `spool` stores what hooks could
not deliver, and `transcripts` follows Claude Code's transcript files.
"""

from mnemoweave.daemon import hooks, team  # noqa: F401  (add the hooks and team routes to the table)
