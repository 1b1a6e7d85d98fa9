"""The warm daemon (`mnemoweave serve`): one Engine behind an HTTP JSON API on a Unix socket.

`server` runs it (lock, socket, threads, signals, idle timer), `routes` is the route table
that dispatches requests and generates `openapi.json`, `remote` gives the CLI the same
Engine operations through it, `process` is the lock and pid file seen from outside, and
`hosts` adds the hooks route, the spool replay and the transcript follower.
"""

from . import hosts  # noqa: F401  (adds the hooks route to the table)
