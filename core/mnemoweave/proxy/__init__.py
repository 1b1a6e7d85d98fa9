"""The memory proxy: an OpenAI- and Anthropic-compatible HTTP server on 127.0.0.1 that
weaves memory into each chat request and stores the conversation on the way back.

A face of mnemoweave, like the CLI: core modules never import it. `app.py` serves and
forwards, `openai.py` and `anthropic.py` know each API's body and stream, `sse.py` reads
server-sent events, `memory.py` talks to the daemon over its Unix socket (the proxy never
opens the store), `turns.py` makes tool calls into short lines.
"""
