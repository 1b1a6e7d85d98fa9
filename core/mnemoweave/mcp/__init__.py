"""The MCP server (`mnemoweave mcp`): the memory tools an agent calls, over stdio.

`front.py` answers the start of a conversation at once (from `listing.json`, checked against
the full server by a test) and hands the rest to `server.py`, the full server; `stdio.py` is
its transport, and `review.py` and `skill.py` word the answers of the review and skill tools.
A face, like the CLI: it reaches memory through the Engine (or the daemon's RemoteEngine).
"""
