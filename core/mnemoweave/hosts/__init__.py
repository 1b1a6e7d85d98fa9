"""The hosts: what connects Claude Code, OpenCode, Codex, Gemini and dsh to one memory.

`adapters.py` is the host registry (register_hosts) and its dispatch; `claude_code.py`,
`opencode.py`, `codex.py`, `gemini.py` and `dsh.py` turn each host's hook payloads into
canonical events and answer
what the host reads back, using the Engine only; `payloads.py` reads the fields they share.
`client.py` is the daemon's stdlib-only client the hook process (`mnemoweave.hook`) uses,
`cold_start.py` answers a session start while no daemon runs, and `install.py` writes the
hosts' settings and plugins.
"""
