"""The trainer coordinator's retry policy, as the Java RestCoordinator's: a 503 with Retry-After is
waited out and the call repeated; a commit or abort whose retry finds the generation already
ACTIVE or ABORTED won on the earlier attempt; the same conflict on a first attempt is an error;
other failures are not retried. Against a real HTTP server on loopback that answers from a
script (control-api cannot be made to answer 503 then lose an answer on cue)."""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from weight_relay import ConflictError, ControlClient, UnavailableError
from weight_relay.errors import PROBLEM_BASE


def _problem(slug: str, status: int, **members: object) -> str:
    return json.dumps({"type": PROBLEM_BASE + slug, "title": slug, "status": status,
                       "detail": slug, **members})


class _Script:
    def __init__(self) -> None:
        self.answers: deque[tuple[int, str, dict[str, str]]] = deque()
        self.calls: list[str] = []


@pytest.fixture
def scripted() -> Iterator[tuple[_Script, str]]:
    script = _Script()

    class Handler(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            self.rfile.read(length)
            script.calls.append(f"{self.command} {self.path}")
            status, body, headers = (script.answers.popleft() if script.answers
                                     else (500, _problem("unscripted", 500), {}))
            data = body.encode("utf-8")
            self.send_response(status)
            kind = "application/problem+json" if status >= 400 else "application/json"
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(data)))
            for k, v in headers.items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)

        do_GET = _answer
        do_POST = _answer

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield script, f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


GENERATION = json.dumps({"model": "m", "generation": 7, "state": "ACTIVE"})
UNAVAILABLE = (503, _problem("redis-unavailable", 503), {"Retry-After": "0"})


def test_a_503_is_waited_out_and_the_call_repeated(scripted):
    script, url = scripted
    script.answers.extend([UNAVAILABLE, UNAVAILABLE, (200, GENERATION, {})])
    assert ControlClient(url, "t").commit("m", 7)["state"] == "ACTIVE"
    assert script.calls == ["POST /api/v1/models/m/generations/7/commit"] * 3


def test_a_commit_whose_retry_finds_it_active_won_on_the_earlier_attempt(scripted):
    script, url = scripted
    script.answers.extend([UNAVAILABLE,
                           (409, _problem("commit-conflict", 409, state="ACTIVE"), {}),
                           (200, GENERATION, {})])
    assert ControlClient(url, "t").commit("m", 7)["state"] == "ACTIVE"
    assert script.calls[-1] == "GET /api/v1/models/m/generations/7"


def test_an_abort_whose_retry_finds_it_aborted_won_on_the_earlier_attempt(scripted):
    script, url = scripted
    aborted = json.dumps({"model": "m", "generation": 7, "state": "ABORTED"})
    script.answers.extend([UNAVAILABLE,
                           (409, _problem("generation-not-open", 409, state="ABORTED"), {}),
                           (200, aborted, {})])
    assert ControlClient(url, "t").abort("m", 7, "rank 3 failed")["state"] == "ABORTED"


def test_the_same_conflict_on_a_first_attempt_is_an_error(scripted):
    script, url = scripted
    script.answers.append((409, _problem("commit-conflict", 409, state="ACTIVE"), {}))
    with pytest.raises(ConflictError) as e:
        ControlClient(url, "t").commit("m", 7)
    assert e.value.slug == "commit-conflict"
    assert len(script.calls) == 1


def test_other_failures_are_not_retried(scripted):
    script, url = scripted
    script.answers.append((500, _problem("internal", 500), {}))
    with pytest.raises(Exception) as e:
        ControlClient(url, "t").commit("m", 7)
    assert not isinstance(e.value, ConflictError)
    assert len(script.calls) == 1


def test_a_503_past_the_budget_fails_naming_it(scripted, monkeypatch):
    script, url = scripted
    monkeypatch.setattr(ControlClient, "RETRY_BUDGET", 0.3)
    script.answers.extend([(503, _problem("redis-unavailable", 503), {"Retry-After": "1"})] * 10)
    started = time.monotonic()
    with pytest.raises(UnavailableError) as e:
        ControlClient(url, "t").commit("m", 7)
    assert e.value.status == 503 and e.value.headers.get("retry-after") == "1"
    assert time.monotonic() - started < 5
    assert 1 <= len(script.calls) <= 3
