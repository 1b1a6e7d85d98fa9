"""Finding what a prompt needs and weaving it before the model turn.

`retrieve.py` ranks candidates (BM25 over jieba tokens fused with one or two dense
channels), `relevance.py` gates them on absolute signals (`wordinfo.py`: how much a word
says), `snippets.py` and `exchanges.py` show past turns, `knowledge.py` builds the knowledge
tier, `brief.py` a session's start, and `weave.py` puts the tiers under a budget;
`timeline.py` and `threads.py` are the sessions as people browse them and the requests left
open.
"""
