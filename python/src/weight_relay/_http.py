"""A small JSON-over-HTTP client on the standard library (one connection per call, like the Java
clients' SimpleClientHttpRequestFactory), with the protocol's timeouts."""

from __future__ import annotations

import http.client
import json
import logging
import time
import urllib.parse
from collections.abc import Mapping
from typing import Any

from .errors import ProtocolError, UsageError, call_error, no_answer

_log = logging.getLogger("weight_relay.http")


class Response:
    def __init__(self, status: int, headers: dict[str, str], body: bytes, what: str = "") -> None:
        self.status = status
        self.headers = headers
        self.body = body
        self.what = what

    def json(self) -> Any:
        """The body as JSON (None when empty); :class:`ProtocolError` when it is not JSON."""
        if not self.body:
            return None
        try:
            return json.loads(self.body)
        except ValueError as e:  # JSONDecodeError and UnicodeDecodeError are both ValueErrors
            raise ProtocolError(f"{self.what or 'a call'}: the answer ({self.status}) is not JSON: "
                                f"{e}: {self.body[:300]!r}") from e

    def json_object(self) -> dict[str, Any]:
        """The body as a JSON object; :class:`ProtocolError` when it is anything else."""
        return json_object(self.json(), self.what)


def json_object(answer: Any, what: str) -> dict[str, Any]:
    """``answer`` when it is a JSON object, else :class:`ProtocolError` naming ``what``."""
    if not isinstance(answer, dict):
        raise ProtocolError(f"{what}: the answer is not a JSON object: {answer!r:.300}")
    return answer


def field(answer: Mapping[str, Any], path: str, what: str) -> Any:
    """The value at ``path`` (``"a.b"``: ``answer["a"]["b"]``) of an answer, else
    :class:`ProtocolError` naming the field and ``what``."""
    value: Any = answer
    for name in path.split("."):
        if not isinstance(value, Mapping) or value.get(name) is None:
            raise ProtocolError(f"{what}: the answer has no {path!r}: {answer!r:.300}")
        value = value[name]
    return value


class RestClient:
    """Calls one service. ``timeout`` is the connect and read timeout of one call (seconds)."""

    def __init__(self, base_url: str, token: str | None, timeout: float, service: str) -> None:
        try:
            parsed = urllib.parse.urlsplit(base_url)
            port = parsed.port  # parsed lazily: a port out of range or not a number raises here
        except (ValueError, TypeError) as e:
            raise UsageError(f"not an http(s) URL: {base_url!r}: {e}") from e
        if parsed.scheme not in ("http", "https") or not parsed.hostname:
            raise UsageError(f"not an http(s) URL: {base_url!r}")
        self.base_url = base_url.rstrip("/")
        self._https = parsed.scheme == "https"
        self._host = parsed.hostname
        self._port = port or (443 if self._https else 80)
        self._prefix = parsed.path.rstrip("/")
        self._token = token
        self.timeout = timeout
        self.service = service

    def raw(self, method: str, path: str, body: Any, what: str) -> Response:
        headers = {"Accept": "application/json, application/problem+json"}
        data = None
        if body is not None:
            try:
                data = json.dumps(body, separators=(",", ":")).encode("utf-8")
            except (TypeError, ValueError) as e:
                raise UsageError(f"{what}: the request body is not JSON: {e}") from e
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
            return Response(r.status, {k.lower(): v for k, v in r.getheaders()}, payload, what)
        except (TimeoutError, OSError, http.client.HTTPException) as e:
            _log.debug("%s %s%s: no answer after %.3f s: %s", method, self.base_url, path,
                       time.perf_counter() - started, e)
            raise no_answer(f"{self.service} {self.base_url}", what, e) from e
        except ValueError as e:  # what http.client refuses to send: a token with a line break
            raise UsageError(f"{what}: the request cannot be sent: {e}") from e
        finally:
            conn.close()

    def call(self, method: str, path: str, body: Any = None, what: str = "") -> Any:
        r = self.raw(method, path, body, what or f"{method} {path}")
        if r.status >= 400:
            raise call_error(f"{self.service} {self.base_url}", what or f"{method} {path}",
                             r.status, r.body, r.headers)
        return r.json()

    def call_object(self, method: str, path: str, body: Any = None, what: str = ""
                    ) -> dict[str, Any]:
        """:meth:`call` for an operation whose contract answers a JSON object."""
        what = what or f"{method} {path}"
        return json_object(self.call(method, path, body, what), what)

    def call_list(self, method: str, path: str, body: Any = None, what: str = ""
                  ) -> list[Any]:
        """:meth:`call` for an operation whose contract answers a JSON array."""
        what = what or f"{method} {path}"
        answer = self.call(method, path, body, what)
        if not isinstance(answer, list):
            raise ProtocolError(f"{what}: the answer is not a JSON array: {answer!r:.300}")
        return answer


def quote(segment: str) -> str:
    return urllib.parse.quote(segment, safe="")
