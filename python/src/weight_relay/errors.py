"""Typed errors of weight-relay calls, carrying the RFC 9457 problem the service answered."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .answers import UpdateProgress

PROBLEM_BASE = "https://weightrelay.io/problems/"


class RelayError(Exception):
    """Base of every error this package raises (the stand-ins of other frameworks' classes in
    :mod:`weight_relay.adapters` raise what those frameworks raise)."""


class UsageError(RelayError, ValueError):
    """An argument or a call order the package refuses before anything is sent: an unknown dtype,
    a tensor out of manifest order, a shape that does not match the manifest, a missing URL."""


class WrongTypeError(UsageError, TypeError):
    """An argument of a type the call does not take (a ``TypeError`` too)."""


class UnknownNameError(RelayError, KeyError):
    """A name the thing asked does not have: a worker or buffer of an instance, a tensor's dtype,
    a model's parameter."""

    def __str__(self) -> str:  # KeyError quotes its argument; the message reads as a sentence
        return str(self.args[0]) if self.args else ""


class NotRegisteredError(RelayError, RuntimeError):
    """The instance's receive buffers are not placed yet (before its first update)."""


class ProtocolError(RelayError):
    """A service answered something its contract does not allow: a body that is not JSON, a
    required field missing or of the wrong type, a receive buffer that does not hold the image
    its registration promised."""


class UpdateTimeoutError(RelayError, TimeoutError):
    """An update was still running when the caller's deadline passed (it goes on in the
    loader; follow it again or let it end)."""


class UpdateInFlightError(RelayError, RuntimeError):
    """The instance's update is running and may be overwriting the receive buffer that views would
    show: take them once it ended. ``update_id`` and ``generation`` name the running update."""

    def __init__(self, message: str, update_id: str, generation: int) -> None:
        super().__init__(message)
        self.update_id = update_id
        self.generation = generation


class MapError(RelayError, OSError):
    """A shared-memory file cannot be opened, created or mapped: a loader's receive buffer (the
    engine must run on its loader's node), or a file shared with a Mooncake agent."""


class StagingMapError(MapError):
    """The publisher's staging file cannot be mapped: a rank must run on its publisher's node."""


class VerificationError(RelayError):
    """Bytes received differ from the bytes expected (the benchmark's own check)."""


class ClosedError(RelayError):
    """The client was closed; make a new one."""


class RelayCallError(RelayError):
    """A REST call failed: the service answered with a problem, or did not answer at all.

    ``type`` is the problem's full type URI (``https://weightrelay.io/problems/<slug>``), ``slug``
    its last part (``no-answer`` when nothing came back), ``status`` the HTTP status (0 without an
    answer), ``title`` and ``detail`` the problem's own fields.
    """

    def __init__(
        self,
        service: str,
        what: str,
        status: int,
        type: str,
        title: str,
        detail: str,
        problem: dict[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        self.service = service
        self.what = what
        self.status = status
        self.type = type
        self.title = title
        self.detail = detail
        self.problem = problem or {}
        #: The answer's headers, names in lower case (``retry-after`` of a 503, say).
        self.headers: dict[str, str] = dict(headers or {})
        if status == 0:
            message = f"{service}: {what} got no answer: {detail}"
        else:
            message = f"{service}: {what} failed ({status} {self.slug}): {detail or title}"
        super().__init__(message)

    @property
    def slug(self) -> str:
        return self.type[len(PROBLEM_BASE):] if self.type.startswith(PROBLEM_BASE) else self.type


class BadRequestError(RelayCallError):
    """400: the request is malformed or violates a constraint (e.g. ``placement-overlap``)."""


class UnauthorizedError(RelayCallError):
    """401/403: no token, an unknown token, or a role that may not call the operation."""


class NotFoundError(RelayCallError):
    """404: the named thing does not exist."""


class ConflictError(RelayCallError):
    """409: conflicts with the current state (e.g. ``generation-failed``); nothing changed."""


class StagingFullError(RelayCallError):
    """429: staging stayed full for the whole reserve timeout."""


class UnavailableError(RelayCallError):
    """503 or no answer: the service (or one it depends on) is unavailable."""


_BY_STATUS = {400: BadRequestError, 401: UnauthorizedError, 403: UnauthorizedError,
              404: NotFoundError, 409: ConflictError, 429: StagingFullError,
              503: UnavailableError}


def call_error(service: str, what: str, status: int, body: bytes,
               headers: Mapping[str, str] | None = None) -> RelayCallError:
    """The typed error for an HTTP error answer, keeping the problem's fields and the headers."""
    import json

    problem: dict[str, Any] = {}
    try:
        parsed = json.loads(body.decode("utf-8")) if body else {}
        if isinstance(parsed, dict):
            problem = parsed
    except (UnicodeDecodeError, ValueError):
        pass
    raw = body.decode("utf-8", "replace")[:2000] if body else ""
    cls = _BY_STATUS.get(status, RelayCallError)
    return cls(
        service,
        what,
        status,
        str(problem.get("type", "unknown")),
        str(problem.get("title", "")),
        str(problem.get("detail", raw if not problem else "")),
        problem,
        headers,
    )


def no_answer(service: str, what: str, cause: BaseException) -> UnavailableError:
    return UnavailableError(service, what, 0, "no-answer", "no answer", str(cause))


class PublishFailedError(RelayError):
    """A publish failed on some rank or at commit; the generation was aborted and the previous
    one stays active. ``failures`` maps node to its first failure."""

    def __init__(self, generation: int, message: str, failures: dict[str, str]) -> None:
        super().__init__(message)
        self.generation = generation
        self.failures = failures


class WeightLoadError(RelayError):
    """The received weights could not be loaded into the engine's parameters (a name, shape or
    dtype the model does not have): no rank loaded anything, the old weights serve on. ``ranks``
    maps each failing rank to its error; empty when the engine itself refused a step of the
    update (its answer is in the message)."""

    def __init__(self, message: str, ranks: dict[int, str]) -> None:
        super().__init__(message)
        self.ranks = ranks


class UpdateFailedError(RelayError):
    """An update ended without ``UPDATED``. ``outcome`` is ``RESUMED_OLD`` (the old weights are
    untouched: resume serving) or ``PAUSED_REBUILD`` (re-register before the next update);
    ``progress`` is the loader's whole answer (:class:`weight_relay.UpdateProgress`)."""

    def __init__(self, progress: UpdateProgress) -> None:
        self.progress = progress
        self.outcome = progress.outcome
        self.failing_peer = progress.failing_peer
        self.error = progress.error
        super().__init__(
            f"update {progress.update_id} to generation {progress.generation} ended "
            f"{self.outcome}: {self.error} (failing peer {self.failing_peer})"
        )
