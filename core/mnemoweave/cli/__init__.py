"""The `mnemoweave` command line. Read commands take --json; bad input exits 2.

`main.py` holds the click group, the commands of the main job (remember, search, weave,
list, ingest, status, demo) and what every command shares (the engine, the JSON output, the
one place errors become exit code 2); each other module adds the commands of one subject
(`review.py`: distill, pending, review...; `hosts.py`: hook, install...; `daemon.py`: serve,
stop). `scope.py` is the --project/--global options, `terminal.py` what is printed of stored
text, `demo.py` the demo.
"""
