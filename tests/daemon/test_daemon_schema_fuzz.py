"""Every route of the published OpenAPI schema, fed what schemathesis generates from it:
the daemon answers 2xx or a clear 4xx, never a 500, and the store stays sound."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import quote, urlencode

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from running import raw_request
from schemathesis.core.errors import InvalidSchema
from schemathesis.core.result import Err, Ok

T = TypeVar("T")

SPEC = Path(__file__).resolve().parents[2] / "core" / "mnemoweave" / "daemon" / "openapi.json"
SCHEMA = schemathesis.openapi.from_dict(json.loads(SPEC.read_text()))


def valid(result: Ok[T] | Err[InvalidSchema]) -> T:
    """The operation; one the schema gets wrong fails the collection with its error."""
    if isinstance(result, Err):
        raise result.err()
    return result.ok()


OPERATIONS = [valid(result) for result in SCHEMA.get_all_operations()]


def send(home: Path, case) -> tuple[int, dict[str, Any]]:
    path = case.path
    for name, value in (case.path_parameters or {}).items():
        path = path.replace(f"{{{name}}}", quote(str(value), safe=""))
    query = {k: json.dumps(v) if isinstance(v, dict | list) else v for k, v in case.query.items()}
    target = path + (f"?{urlencode(query, doseq=True)}" if query else "")
    has_body = not isinstance(case.body, schemathesis.core.NotSet)
    body = json.dumps(case.body).encode() if has_body else b""
    return raw_request(home, case.method, target, body)


@pytest.mark.parametrize("operation", OPERATIONS, ids=lambda op: f"{op.method} {op.path}")
def test_generated_requests_never_break_the_daemon(shared_daemon, operation):
    @settings(
        max_examples=25,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        database=None,
    )
    @given(case=operation.as_strategy())
    def check(case) -> None:
        status, answer = send(shared_daemon.home, case)
        assert status < 500, (case.method, case.path, answer)
        if status >= 400:
            assert set(answer) == {"error"} and "\n" not in answer["error"]

    check()


def test_the_store_is_sound_after_the_fuzzing(shared_daemon):
    checks = shared_daemon.call("POST", "/v1/doctor", {})
    assert all(check["ok"] for check in checks), checks
