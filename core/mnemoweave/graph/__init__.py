"""The knowledge graph: the entities memories and turns name (services, libraries, files,
people...) and the relations they state, read by rules (extract.py), kept in SQLite
(store/graph.py) as texts are written (build.py), used by recall (recall.py) and shown by
the faces (views.py, export.py)."""
