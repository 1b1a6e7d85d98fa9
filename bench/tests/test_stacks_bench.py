"""The HTTP stacks benchmark starts each stack, times its first answer and its round trips."""

import argparse

import stacks


def test_each_stack_answers_and_is_timed():
    report = stacks.run(argparse.Namespace(requests=20))
    assert set(report) == {"http.server", "starlette+uvicorn"}
    for stack in report.values():
        assert stack["start_ms"] > 0 and 0 < stack["p50_ms"] <= stack["p95_ms"]
