"""A small JSON-over-HTTP client on the standard library (one connection per call, like the Java
clients' SimpleClientHttpRequestFactory), with the protocol's timeouts."""

from __future__ import annotations

import http.client
import json
import logging
import time
import urllib.parse
from typing import Any

from .errors import UsageError, call_error, no_answer

_log = logging.getLogger("weight_relay.http")


class Response:
    def __init__(self, status: int, headers: dict[str, str], body: bytes) -> None:
        self.status = status
        self.headers = headers
        self.body = body

    def json(self) -> Any:
        return json.loads(self.body) if self.body else None


class RestClient:
    """Calls one service. ``timeout`` is the connect and read timeout of one call (seconds)."""

    def __init__(self, base_url: str, token: str | None, timeout: float, service: str) -> None:
        parsed = urllib.parse.urlsplit(base_url)
        if parsed.scheme not in ("http", "https") or not parsed.hostname:
            raise UsageError(f"not an http(s) URL: {base_url!r}")
        self.base_url = base_url.rstrip("/")
        self._https = parsed.scheme == "https"
        self._host = parsed.hostname
        self._port = parsed.port or (443 if self._https else 80)
        self._prefix = parsed.path.rstrip("/")
        self._token = token
        self.timeout = timeout
        self.service = service

    def raw(self, method: str, path: str, body: Any, what: str) -> Response:
        headers = {"Accept": "application/json, application/problem+json"}
        data = None
        if body is not None:
            data = json.dumps(body, separators=(",", ":")).encode("utf-8")
            headers["Content-Type"] = "application/json"
        if self._token:
            headers["Authorization"] = "Bearer " + self._token
        cls = http.client.HTTPSConnection if self._https else http.client.HTTPConnection
        conn = cls(self._host, self._port, timeout=self.timeout)
        started = time.perf_counter()
        try:
            conn.request(method, self._prefix + path, body=data, headers=headers)
            r = conn.getresponse()
            payload = r.read()
            _log.debug("%s %s%s: %d in %.3f s", method, self.base_url, path, r.status,
                       time.perf_counter() - started)
            return Response(r.status, {k.lower(): v for k, v in r.getheaders()}, payload)
        except (TimeoutError, OSError, http.client.HTTPException) as e:
            _log.debug("%s %s%s: no answer after %.3f s: %s", method, self.base_url, path,
                       time.perf_counter() - started, e)
            raise no_answer(f"{self.service} {self.base_url}", what, e) from e
        finally:
            conn.close()

    def call(self, method: str, path: str, body: Any = None, what: str = "") -> Any:
        r = self.raw(method, path, body, what or f"{method} {path}")
        if r.status >= 400:
            raise call_error(f"{self.service} {self.base_url}", what or f"{method} {path}",
                             r.status, r.body)
        return r.json()


def quote(segment: str) -> str:
    return urllib.parse.quote(segment, safe="")
