"""What goes wrong outside the package (an answer that is not the contract's, a file that cannot be
mapped, a dead agent socket, a malformed document) leaves it as a :class:`RelayError` subclass with
the foreign exception as its ``__cause__``, never as the bare ``ValueError``, ``KeyError``,
``OSError`` or ``json.JSONDecodeError`` it started as. No lab needed: a loopback HTTP server that
answers what each case needs stands in for the services."""

from __future__ import annotations

import http.server
import json
import os
import socket
import struct
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from weight_relay import (
    LoaderClient,
    Manifest,
    MapError,
    ProtocolError,
    PublisherClient,
    RelayError,
    StagingMapError,
    TensorSpec,
    UnknownNameError,
    UsageError,
    WrongTypeError,
    packed_bindings,
    placement_json,
)
from weight_relay.mooncake_agent import AgentGoneError, AgentProtocolError, recv_frame
from weight_relay.mooncake_client import AgentClient, SharedFile


@contextmanager
def _answering(answers: dict[str, tuple[int, dict[str, str], bytes]]) -> Iterator[str]:
    """A loopback HTTP server answering ``GET path`` with ``answers[path]`` (status, headers,
    body); its base URL. The headers of every request are kept under ``/seen``."""
    seen: list[dict[str, str]] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def _answer(self) -> None:
            seen.append(dict(self.headers))
            status, headers, body = answers.get(self.path, (404, {}, b""))
            self.send_response(status)
            for k, v in headers.items():
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = do_PUT = do_DELETE = _answer

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def _cause(error: BaseException, kind: type[BaseException]) -> None:
    assert isinstance(error, RelayError), type(error)
    assert isinstance(error.__cause__, kind), repr(error.__cause__)


_STATUS = {"instanceId": "i0", "model": "m", "group": "g", "node": "n0", "epoch": 1,
           "workers": [{"workerId": "i0-w0", "mode": "compat"}], "buffers": []}


def test_an_answer_outside_the_contract_is_a_protocol_error_with_its_cause() -> None:
    json_body = {"Content-Type": "application/json"}
    answers = {
        "/not-json/api/v1/instance": (200, {"Content-Type": "text/html"}, b"<html>proxy</html>"),
        "/array/api/v1/instance": (200, json_body, b"[1, 2]"),
        "/epoch/api/v1/instance": (200, json_body,
                                   json.dumps({**_STATUS, "epoch": "one"}).encode()),
        "/worker/api/v1/instance": (200, json_body,
                                    json.dumps({**_STATUS, "workers": [{"mode": "x"}]}).encode()),
    }
    with _answering(answers) as url:
        with pytest.raises(ProtocolError, match="not JSON") as e:
            LoaderClient(url + "/not-json").status()
        _cause(e.value, json.JSONDecodeError)
        with pytest.raises(ProtocolError, match="not a JSON object"):
            LoaderClient(url + "/array").status()
        with pytest.raises(ProtocolError, match="does not fit the contract") as e:
            LoaderClient(url + "/epoch").status()
        _cause(e.value, ValueError)
        with pytest.raises(ProtocolError, match="workerId"):
            LoaderClient(url + "/worker").status()


def test_what_http_cannot_send_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="not an http") as e:
        LoaderClient("http://127.0.0.1:99999")  # the port is parsed lazily, and out of range
    _cause(e.value, ValueError)
    with _answering({}) as url:
        with pytest.raises(UsageError, match="cannot be sent") as e:
            LoaderClient(url, token="abc\r\nX-Injected: 1").status()
        _cause(e.value, ValueError)


class _OneBuffer:
    """The loader's answers for one instance whose compat buffer is the file ``path``."""

    base_url = "http://loader.invalid"

    def __init__(self, path: str) -> None:
        self.path = path

    def call(self, method: str, path: str, body: Any = None, what: str = "") -> Any:
        if path == "/api/v1/instance":
            return {**_STATUS, "buffers": [{"workerId": "i0-w0", "bufferId": "safetensors",
                                            "segment": "seg", "offset": 0, "size": 64,
                                            "state": "PLACED", "shmPath": self.path}]}
        if path == "/api/v1/updates/current":
            return {"updateId": "u1", "generation": 1, "phase": "DONE", "outcome": "UPDATED"}
        raise AssertionError(f"unexpected call {method} {path}")


def _loader(path: Path) -> LoaderClient:
    lc = LoaderClient("http://loader.invalid")
    lc.rest = _OneBuffer(str(path))  # type: ignore[assignment]
    return lc


def test_a_receive_buffer_that_cannot_be_mapped_is_a_map_error(tmp_path: Path) -> None:
    with pytest.raises(MapError, match="loader's node") as e:
        _loader(tmp_path / "gone.shm").compat_tensors(framework="numpy")
    _cause(e.value, FileNotFoundError)
    assert isinstance(e.value, OSError) and e.value.errno is not None
    empty = tmp_path / "empty.shm"
    empty.write_bytes(b"")
    with pytest.raises(MapError) as e:  # mmap refuses an empty file with ValueError
        _loader(empty).compat_tensors(framework="numpy")
    _cause(e.value, ValueError)


def test_a_buffer_without_a_safetensors_image_is_a_protocol_error(tmp_path: Path) -> None:
    garbage = tmp_path / "garbage.shm"
    header = b"\xff\xfe not json at all"
    garbage.write_bytes(len(header).to_bytes(8, "little") + header + bytes(64))
    with _loader(garbage) as lc, pytest.raises(ProtocolError, match="holds no image") as e:
        lc.compat_tensors(framework="numpy")
    assert isinstance(e.value.__cause__, UsageError)
    assert isinstance(e.value.__cause__.__cause__, UnicodeDecodeError)


def test_a_staging_file_shorter_than_announced_is_a_staging_map_error(tmp_path: Path) -> None:
    short = tmp_path / "staging.shm"
    short.write_bytes(bytes(16))

    class ShortStaging:
        base_url = "http://publisher.invalid"

        def call(self, method: str, path: str, body: Any = None,
                 what: str = "") -> dict[str, Any]:
            return {"path": str(short), "fileSize": 1 << 20, "node": "n0"}

        call_object = call

    pc = PublisherClient("http://publisher.invalid", "t")
    pc.rest = ShortStaging()  # type: ignore[assignment]
    with pytest.raises(StagingMapError, match="publisher's node") as e:
        pc.staging_map()
    _cause(e.value, ValueError)


def test_a_retry_after_as_an_http_date_waits_the_default() -> None:
    problem = b'{"type":"https://weightrelay.io/problems/staging-full","status":429}'
    date = {"Retry-After": "Wed, 21 Oct 2026 07:28:00 GMT"}

    class FullOnce:
        base_url = "http://publisher.invalid"
        calls = 0

        def raw(self, method: str, path: str, body: Any, what: str) -> Any:
            from weight_relay._http import Response

            FullOnce.calls += 1
            if FullOnce.calls == 1:
                return Response(429, {k.lower(): v for k, v in date.items()}, problem)
            return Response(201, {}, b'{"reservationId":"r1","offset":0,"size":64}')

    pc = PublisherClient("http://publisher.invalid", "t", reserve_timeout=5)
    pc.rest = FullOnce()  # type: ignore[assignment]
    assert pc.reserve(64).reservation_id == "r1"


def test_documents_the_caller_hands_in_fail_as_usage_errors() -> None:
    m = Manifest("m", [TensorSpec("a", (2,), "fp32", "fp32")])
    with pytest.raises(UnknownNameError, match="no tensor b") as e:
        m.spec("b")
    assert isinstance(e.value, RelayError)
    with pytest.raises(UsageError, match="not a manifest") as e:
        Manifest.from_json({"model": "m", "tensors": [{"name": "a"}]})
    _cause(e.value, KeyError)
    with pytest.raises(WrongTypeError, match="WeightPlacementManifest") as e:
        placement_json(object())
    assert isinstance(e.value, TypeError)  # what a caller catching TypeError still catches
    with pytest.raises(UsageError, match="not a #3187 placement") as e:
        packed_bindings('{"parts": 3}', "p0", "buf")
    _cause(e.value, TypeError)


def test_a_dead_agent_socket_and_a_garbled_frame_are_agent_errors(tmp_path: Path) -> None:
    with pytest.raises(AgentGoneError, match="no Mooncake agent answers") as e:
        AgentClient(str(tmp_path / "no-agent.sock"))
    _cause(e.value, FileNotFoundError)
    a, b = socket.socketpair()
    with a, b:
        data = b"{not json"
        a.sendall(struct.pack(">I", len(data)) + data)
        with pytest.raises(AgentProtocolError, match="not JSON") as e:
            recv_frame(b)
        _cause(e.value, json.JSONDecodeError)


def test_a_shared_file_that_cannot_be_made_is_a_map_error_and_close_is_idempotent(
        tmp_path: Path) -> None:
    with pytest.raises(MapError, match="cannot create") as e:
        SharedFile(str(tmp_path / "no-such-dir" / "f.shm"), 4096)
    _cause(e.value, FileNotFoundError)
    path = tmp_path / "f.shm"
    shared = SharedFile(str(path), 4096)
    shared.view[:4] = b"abcd"
    with shared:
        pass
    assert shared.closed and not path.exists()
    # A second close leaves alone a file that now has the same name but is someone else's.
    path.write_bytes(b"another owner's file")
    shared.close()
    assert path.read_bytes() == b"another owner's file"
    os.unlink(path)


def test_an_agent_that_closes_its_socket_is_gone_and_logged(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    import logging

    path = str(tmp_path / "closing.sock")
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(1)
    caplog.set_level(logging.WARNING, logger="weight_relay")
    with server, AgentClient(path, command_timeout=10) as client:
        conn, _ = server.accept()
        conn.close()  # an agent that dies between commands
        with pytest.raises(AgentGoneError, match="during 'ping'"):
            client.ping()
    assert any(r.name == "weight_relay.mooncake" and r.levelno == logging.WARNING
               and "during 'ping'" in r.getMessage() for r in caplog.records)
