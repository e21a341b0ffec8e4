"""The services' answers a caller touches, as frozen dataclasses.

Each keeps the service's whole JSON answer in ``raw`` for the fields it does not name (byte
counters, phase durations), so a newer service never loses information on the way in.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from .errors import ProtocolError

#: Outcomes of an update (loader contract ``UpdateOutcome``).
RUNNING = "RUNNING"
UPDATED = "UPDATED"
FETCHED = "FETCHED"
RESUMED_OLD = "RESUMED_OLD"
PAUSED_REBUILD = "PAUSED_REBUILD"


_T = TypeVar("_T")


def _parse(what: str, j: Any, build: Callable[[Mapping[str, Any]], _T]) -> _T:
    """``build(j)``, with an answer that is not an object, or a field of the wrong type, turned
    into :class:`ProtocolError` (the conversions would raise ``TypeError`` or ``ValueError``)."""
    if not isinstance(j, Mapping):
        raise ProtocolError(f"{what}: the answer is not a JSON object: {j!r:.300}")
    try:
        return build(j)
    except (TypeError, ValueError, AttributeError) as e:
        raise ProtocolError(f"{what}: the answer does not fit the contract ({e}): "
                            f"{dict(j)!r:.300}") from e


def _required(j: Mapping[str, Any], name: str, what: str) -> Any:
    if name not in j or j[name] is None:
        raise ProtocolError(f"{what}: the answer has no {name!r}: {dict(j)!r:.300}")
    return j[name]


def _optional_int(j: Mapping[str, Any], name: str) -> int | None:
    v = j.get(name)
    return None if v is None else int(v)


@dataclass(frozen=True)
class UpdateProgress:
    """Where one update of an engine instance stands (``GET /api/v1/updates/{id}``).

    ``outcome`` is ``RUNNING`` until the update ends, then ``UPDATED`` (the new generation is in
    place), ``RESUMED_OLD`` (the old weights are untouched: serve on) or ``PAUSED_REBUILD``
    (register again before the next update).
    """

    update_id: str
    generation: int
    phase: str
    outcome: str
    bytes_done: int
    bytes_total: int
    previous_generation: int | None = None
    failing_peer: str | None = None
    error: str | None = None
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, j: Mapping[str, Any]) -> UpdateProgress:
        return _parse("update progress", j, cls._build)

    @classmethod
    def _build(cls, j: Mapping[str, Any]) -> UpdateProgress:
        what = "update progress"
        return cls(
            update_id=str(_required(j, "updateId", what)),
            generation=int(_required(j, "generation", what)),
            phase=str(_required(j, "phase", what)),
            outcome=str(_required(j, "outcome", what)),
            bytes_done=int(j.get("bytesDone") or 0),
            bytes_total=int(j.get("bytesTotal") or 0),
            previous_generation=_optional_int(j, "previousGeneration"),
            failing_peer=j.get("failingPeer"),
            error=j.get("error"),
            raw=dict(j),
        )

    @property
    def running(self) -> bool:
        return self.outcome == RUNNING

    @property
    def fetched(self) -> bool:
        """Whether the update (started to install on request) waits at ``FETCHED``: every
        loader of the group fetched and verified, and the engine may drain and install."""
        return self.outcome == RUNNING and self.phase == FETCHED

    def _ms(self, name: str) -> float | None:
        v = (self.raw.get("durations") or {}).get(name)
        return None if v is None else float(v) / 1e3

    @property
    def fetch_s(self) -> float | None:
        """Seconds from the start until every loader of the group fetched and verified."""
        return self._ms("fetchMs")

    @property
    def install_s(self) -> float | None:
        """Seconds from the install call (or the end of the fetch) to the end."""
        return self._ms("installMs")

    @property
    def pause_s(self) -> float | None:
        """Seconds the engine spent paused as the loader sees it: the install when installed on
        request, the whole update otherwise (the engine's own drain and load come on top)."""
        return self._ms("pauseMs")

    @property
    def updated(self) -> bool:
        return self.outcome == UPDATED


@dataclass(frozen=True)
class PlacedBuffer:
    """Where one receive buffer of a worker lives: ``size`` bytes at ``offset`` of segment
    ``segment``, whose shared-memory file is ``shm_path`` once registered. ``serving_shm_path``
    holds the weights the engine serves from: ``shm_path`` itself, except for a staged direct
    worker, whose serving copy the loader writes only at install."""

    worker_id: str
    buffer_id: str
    segment: str
    offset: int
    size: int
    state: str
    shm_path: str | None = None
    serving_shm_path: str | None = None

    @classmethod
    def from_json(cls, j: Mapping[str, Any]) -> PlacedBuffer:
        return _parse("placed buffer", j, cls._build)

    @classmethod
    def _build(cls, j: Mapping[str, Any]) -> PlacedBuffer:
        what = "placed buffer"
        return cls(
            worker_id=str(_required(j, "workerId", what)),
            buffer_id=str(_required(j, "bufferId", what)),
            segment=str(_required(j, "segment", what)),
            offset=int(_required(j, "offset", what)),
            size=int(_required(j, "size", what)),
            state=str(j.get("state") or ""),
            shm_path=j.get("shmPath") or None,
            serving_shm_path=j.get("servingShmPath") or j.get("shmPath") or None,
        )


@dataclass(frozen=True)
class InstanceStatus:
    """An engine instance as its loader holds it (``GET /api/v1/instance``): its registration
    (``workers``, as registered), the generation its workers hold (None before the first update),
    whether it is paused for rebuild, and where each receive buffer lives."""

    instance_id: str
    model: str
    group: str
    node: str
    epoch: int
    workers: tuple[Mapping[str, Any], ...]
    buffers: tuple[PlacedBuffer, ...]
    generation: int | None = None
    paused: bool = False
    direct_install: str = "inPlace"
    staged_bytes: int = 0
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, j: Mapping[str, Any]) -> InstanceStatus:
        return _parse("instance status", j, cls._build)

    @classmethod
    def _build(cls, j: Mapping[str, Any]) -> InstanceStatus:
        what = "instance status"
        workers = tuple(_required(j, "workers", what))
        if not all(isinstance(w, Mapping) and w.get("workerId") for w in workers):
            raise ProtocolError(f"{what}: a worker without a workerId: {workers!r:.300}")
        return cls(
            instance_id=str(_required(j, "instanceId", what)),
            model=str(_required(j, "model", what)),
            group=str(_required(j, "group", what)),
            node=str(_required(j, "node", what)),
            epoch=int(_required(j, "epoch", what)),
            workers=workers,
            buffers=tuple(PlacedBuffer.from_json(b) for b in j.get("buffers") or []),
            generation=_optional_int(j, "generation"),
            paused=bool(j.get("paused", False)),
            direct_install=str(j.get("directInstall") or "inPlace"),
            staged_bytes=int(j.get("stagedBytes") or 0),
            raw=dict(j),
        )


@dataclass(frozen=True)
class Reservation:
    """A reservation of ``size`` bytes at ``offset`` of the publisher's staging file, written by
    one rank and handed over once (``POST /api/v1/staging/reservations``)."""

    reservation_id: str
    offset: int
    size: int

    @classmethod
    def from_json(cls, j: Mapping[str, Any]) -> Reservation:
        return _parse("reservation", j, cls._build)

    @classmethod
    def _build(cls, j: Mapping[str, Any]) -> Reservation:
        what = "reservation"
        return cls(
            reservation_id=str(_required(j, "reservationId", what)),
            offset=int(_required(j, "offset", what)),
            size=int(_required(j, "size", what)),
        )
