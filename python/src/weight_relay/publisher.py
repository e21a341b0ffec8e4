"""The trainer side: the publish protocol of publisher-service/README.md for one rank, and the
coordinator's calls to control-api (open, commit, abort)."""

from __future__ import annotations

import logging
import mmap
import os
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from types import TracebackType
from typing import Any
from urllib.parse import urlencode

from ._crc32c import crc32c, format_crc32c
from ._http import RestClient, field, quote
from .answers import Reservation
from .errors import (
    ClosedError,
    ConflictError,
    ProtocolError,
    PublishFailedError,
    RelayError,
    StagingFullError,
    StagingMapError,
    UnavailableError,
    UsageError,
    call_error,
)
from .manifest import DTYPES, Manifest, TensorSpec, dtype_of, element_bytes

ALIGN = 64
_log = logging.getLogger("weight_relay.publisher")


@dataclass(frozen=True)
class OpenedGeneration:
    model: str
    generation: int
    node_of_tensor: dict[str, str]
    state: str = "OPEN"  # ACTIVE or RETIRED: the step was published and committed before


class ControlClient:
    """control-api as the trainer coordinator (and an operator) calls it, with the Java
    RestCoordinator's policy: 2 minutes per call, and a 503 (Redis away, control-api overloaded)
    waited out after its ``Retry-After`` (1 s without one, at most 5 s) for up to
    :attr:`RETRY_BUDGET` seconds. Every such call is safe to repeat: an open is idempotent by
    trainer step, and a commit or abort whose first answer was lost finds the generation already
    ``ACTIVE`` or ``ABORTED``, which counts as done."""

    #: How long one call keeps retrying 503 answers before it fails (seconds).
    RETRY_BUDGET = 60.0
    _MAX_RETRY_WAIT = 5.0

    def __init__(self, control_url: str, token: str | None = None, timeout: float = 120.0) -> None:
        self.rest = RestClient(control_url, token, timeout, "control-api")

    def _call(self, what: str, call: Callable[[], dict[str, Any]],
              done: tuple[str, str] | None = None,
              after_done: Callable[[], dict[str, Any]] | None = None) -> dict[str, Any]:
        """Runs ``call``, waiting out 503 answers. After a retry, a conflict whose problem slug and
        ``state`` are ``done`` means an earlier attempt won: ``after_done`` answers instead."""
        deadline = time.monotonic() + self.RETRY_BUDGET
        retried = False
        while True:
            try:
                return call()
            except UnavailableError as e:
                if e.status != 503 or time.monotonic() > deadline:
                    raise
                wait = _retry_after(e.headers, default=1.0)
                _log.info("%s: control-api unavailable (503), again in %.1f s", what, wait)
                time.sleep(min(wait, self._MAX_RETRY_WAIT))
                retried = True
            except ConflictError as e:
                if (retried and done is not None and after_done is not None
                        and (e.slug, e.problem.get("state")) == done):
                    _log.info("%s: an earlier attempt won (%s)", what, done[1])
                    return after_done()
                raise

    def open_generation(self, manifest: Manifest, trainer_step: int,
                        trainer_nodes: Iterable[str]) -> OpenedGeneration:
        """Opens (idempotently by trainer step) the generation; every rank may call it."""
        body = {"trainerStep": int(trainer_step), "manifest": manifest.to_json(),
                "trainerTopology": {"nodes": [{"name": n, "nics": [{"name": "nic0", "gbps": 100.0}]}
                                              for n in sorted(trainer_nodes)]}}
        what = f"open generation of step {trainer_step}"
        j = self._call(what, lambda: self.rest.call_object(
            "POST", f"/api/v1/models/{quote(manifest.model)}/generations", body, what))
        try:
            nodes = {str(a["tensor"]): str(a["node"])
                     for a in field(j, "assignment.tensors", what)}
            return OpenedGeneration(manifest.model, int(field(j, "generation.generation", what)),
                                    nodes, str(j["generation"].get("state") or "OPEN"))
        except (KeyError, TypeError, ValueError) as e:
            raise ProtocolError(f"{what}: the answer does not fit the contract ({e}): "
                                f"{j!r:.300}") from e

    def commit(self, model: str, generation: int) -> dict[str, Any]:
        what = f"commit {model}/{generation}"
        return self._call(
            what,
            lambda: self.rest.call_object(
                "POST", _generation_path(model, generation, "/commit"), None, what),
            ("commit-conflict", "ACTIVE"), lambda: self.generation(model, generation))

    def abort(self, model: str, generation: int, reason: str) -> dict[str, Any]:
        what = f"abort {model}/{generation}"
        return self._call(
            what,
            lambda: self.rest.call_object(
                "POST", _generation_path(model, generation, "/abort"),
                {"reason": reason[:2000]}, what),
            ("generation-not-open", "ABORTED"), lambda: self.generation(model, generation))

    def generation(self, model: str, generation: int) -> dict[str, Any]:
        return self.rest.call_object("GET", _generation_path(model, generation))

    def generations(self, model: str, trainer_step: int | None = None,
                    state: str | None = None, limit: int | None = None) -> list[dict[str, Any]]:
        """Generation records, newest first; ``trainer_step`` narrows them to the one the step's
        latest open made (a loader token may read them too)."""
        query = {k: v for k, v in (("trainerStep", trainer_step), ("state", state),
                                   ("limit", limit)) if v is not None}
        path = f"/api/v1/models/{quote(model)}/generations"
        if query:
            path += "?" + urlencode(query)
        return self.rest.call_list("GET", path, None, f"list generations of {model}")

    def active(self, model: str) -> dict[str, Any]:
        return self.rest.call_object("GET", f"/api/v1/models/{quote(model)}/generations/active")

    def collect_garbage(self, model: str) -> dict[str, Any]:
        """Operator or trainer token: removes retired generations nobody holds (publishers also
        ask for this themselves when their segment has no room for the next generation)."""
        return self.rest.call_object("POST", f"/api/v1/models/{quote(model)}/gc", None,
                                     f"gc {model}")


@dataclass
class RankResult:
    node: str
    status: dict[str, Any] | None
    failure: str | None
    batches: int
    bytes: int
    first_hand_over: float  # time.perf_counter() of the first hand-over, 0 if none

    @property
    def ok(self) -> bool:
        return self.failure is None


class PublisherClient:
    """One trainer rank's client of its node's publisher-service (one per rank; thread safe for
    the hand-over threads it starts itself). Maps the publisher's staging file read-write on first
    use; ``coordinator`` (a :class:`ControlClient`) gives the rank the coordinator's calls.

    Timeouts as the Java client: ``timeout`` per call (a batch call converts and stores), the
    reservation retried on 429 for at most ``reserve_timeout``, waiting ``Retry-After-Ms`` /
    ``Retry-After`` (200 ms without either) between tries.

    It maps the staging file on first use: use it as a context manager, or call :meth:`close`
    (idempotent), once the rank is done publishing.
    """

    def __init__(self, publisher_url: str, token: str | None = None, *,
                 coordinator: ControlClient | None = None, node: str | None = None,
                 timeout: float = 300.0, reserve_timeout: float = 300.0,
                 in_flight: int = 2) -> None:
        self.rest = RestClient(publisher_url, token, timeout, "publisher")
        self.coordinator = coordinator
        self.reserve_timeout = reserve_timeout
        self.in_flight = max(1, in_flight)
        self._node = node
        self._info: dict[str, Any] | None = None
        self._map: mmap.mmap | None = None
        self._lock = threading.Lock()
        self._closed = False

    def __enter__(self) -> PublisherClient:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        """Drops this client's hold on the staging mapping: it is unmapped as soon as no view of
        it is left (at once when there is none; see :meth:`LoaderClient.close`); idempotent."""
        with self._lock:
            self._closed = True
            self._map = None

    @property
    def closed(self) -> bool:
        return self._closed

    # ---- staging ----------------------------------------------------------------------------
    def staging_info(self) -> dict[str, Any]:
        if self._info is None:
            self._info = self.rest.call_object("GET", "/api/v1/staging", None,
                                               "read staging info")
        return self._info

    @property
    def node(self) -> str:
        if self._node is None:
            node = self.staging_info().get("node")
            if not node:
                raise UsageError("the publisher does not report its node; pass node=")
            self._node = node
        return self._node

    def staging_map(self) -> mmap.mmap:
        """The whole staging file, mapped read-write once (a rank runs on the publisher's node)."""
        with self._lock:
            if self._closed:
                raise ClosedError("this PublisherClient is closed; make a new one")
            if self._map is None:
                info = self.staging_info()
                path = str(field(info, "path", "read staging info"))
                size = field(info, "fileSize", "read staging info")
                try:
                    fd = os.open(path, os.O_RDWR)
                    try:
                        self._map = mmap.mmap(fd, int(size), mmap.MAP_SHARED,
                                              mmap.PROT_READ | mmap.PROT_WRITE)
                    finally:
                        os.close(fd)
                except (OSError, ValueError) as e:  # ValueError: a file shorter than fileSize
                    raise StagingMapError(getattr(e, "errno", None),
                                          f"cannot map staging {path} of {self.rest.base_url} (a "
                                          f"rank must run on the publisher's node): "
                                          f"{getattr(e, 'strerror', None) or e}") from e
            return self._map

    def reserve(self, nbytes: int, model: str | None = None,
                generation: int | None = None, min_bytes: int | None = None) -> Reservation:
        """Reserves staging for one batch. When staging has no contiguous ``nbytes`` (429) the
        request halves at once, down to ``min_bytes`` (what the next write needs; default
        ``nbytes``), and only a refused ``min_bytes`` waits ``Retry-After``: staging that
        generations of objects left with holes still takes the batch, in smaller pieces."""
        preferred = int(nbytes)
        floor = min(preferred, int(min_bytes)) if min_bytes is not None else preferred
        body: dict[str, Any] = {"bytes": preferred}
        if model is not None:
            if generation is None:
                raise UsageError("reserve: a model needs its generation")
            body.update(model=model, generation=int(generation))
        deadline = time.monotonic() + self.reserve_timeout
        while True:
            what = f"reserve {body['bytes']} bytes"
            r = self.rest.raw("POST", "/api/v1/staging/reservations", body, what)
            if r.status < 400:
                return Reservation.from_json(r.json_object())
            if r.status == 429 and body["bytes"] > floor:
                body["bytes"] = max(floor, body["bytes"] // 2)
                continue
            if r.status != 429 or time.monotonic() > deadline:
                if body["bytes"] < preferred:
                    what += f" (of {preferred} wanted)"
                raise call_error(f"publisher {self.rest.base_url}", what, r.status, r.body)
            wait = _retry_after(r.headers)
            _log.debug("staging of %s full for %d bytes; retrying in %.3f s",
                       self.rest.base_url, body["bytes"], wait)
            time.sleep(wait)
            body["bytes"] = preferred

    def release(self, reservation_id: str) -> None:
        self.rest.call("DELETE", f"/api/v1/staging/reservations/{quote(reservation_id)}", None,
                       f"release reservation {reservation_id}")

    def hand_over(self, model: str, generation: int, reservation_id: str,
                  tensors: list[dict[str, Any]]) -> dict[str, Any]:
        return self.rest.call_object(
            "POST", f"/api/v1/models/{quote(model)}/generations/{generation}/batches",
            {"reservationId": reservation_id, "tensors": tensors},
            f"hand over batch of {len(tensors)} tensor(s) of {model}/{generation}")

    def open(self, model: str, generation: int) -> dict[str, Any]:
        return self.rest.call_object("PUT", _generation_path(model, generation), None,
                                     f"open {model}/{generation}")

    def finish(self, model: str, generation: int) -> dict[str, Any]:
        return self.rest.call_object("POST", _generation_path(model, generation, "/finish"),
                                     None, f"finish {model}/{generation}")

    def status(self, model: str, generation: int) -> dict[str, Any]:
        return self.rest.call_object("GET", _generation_path(model, generation))

    def segment(self) -> dict[str, Any]:
        return self.rest.call_object("GET", "/api/v1/segment")

    # ---- coordinator --------------------------------------------------------------------------
    def _coord(self) -> ControlClient:
        if self.coordinator is None:
            raise UsageError("this rank has no coordinator (pass coordinator=ControlClient(...))")
        return self.coordinator

    def open_generation(self, manifest: Manifest, trainer_step: int,
                        trainer_nodes: Iterable[str]) -> OpenedGeneration:
        return self._coord().open_generation(manifest, trainer_step, trainer_nodes)

    def commit(self, model: str, generation: int) -> dict[str, Any]:
        return self._coord().commit(model, generation)

    def abort(self, model: str, generation: int, reason: str) -> dict[str, Any]:
        return self._coord().abort(model, generation, reason)

    # ---- one rank's walk ------------------------------------------------------------------------
    def begin(self, manifest: Manifest, opened: OpenedGeneration, *, stage_all: bool = False,
              after_staging: Callable[[], None] | None = None) -> RankPublish:
        """Starts this rank's walk over ``manifest`` for ``opened``: call :meth:`RankPublish.add`
        for every tensor in manifest order, then :meth:`RankPublish.finish`."""
        return RankPublish(self, manifest, opened, stage_all, after_staging)

    def publish(self, manifest: Manifest, opened: OpenedGeneration,
                tensors: Mapping[str, Any] | Iterable[tuple[str, Any]], **kw: Any) -> RankResult:
        """Walks ``tensors`` (in manifest order; values may be zero-argument callables, called
        only for tensors this rank publishes) and finishes; never raises for a publish failure
        (the result says it), so every rank reaches finish."""
        walk = self.begin(manifest, opened, **kw)
        items = tensors.items() if isinstance(tensors, Mapping) else tensors
        for name, t in items:
            walk.add(name, t)
        return walk.finish()


def _generation_path(model: str, generation: int, tail: str = "") -> str:
    return f"/api/v1/models/{quote(model)}/generations/{int(generation)}{tail}"


def _retry_after(headers: Mapping[str, str], default: float = 0.2) -> float:
    """The wait a 429 or 503 asks for; ``default`` (200 ms) when it names none in seconds or
    milliseconds (an HTTP date, say)."""
    try:
        ms = headers.get("retry-after-ms")
        if ms:
            return max(0.001, float(ms) / 1000.0)
        s = headers.get("retry-after")
        if s:
            return max(0.0, float(s))
    except ValueError:
        pass
    return default


def _align(n: int) -> int:
    return (n + ALIGN - 1) // ALIGN * ALIGN


@dataclass
class _Part:
    spec: TensorSpec
    tensor_offset: int  # trainer-dtype bytes
    nbytes: int


def write_into(buf: mmap.mmap, offset: int, spec: TensorSpec, tensor: Any,
               tensor_offset: int, nbytes: int) -> None:
    """Copies bytes [tensor_offset, +nbytes) of ``tensor`` (row-major, little-endian) into
    ``buf`` at ``offset``: straight from the tensor's own layout (a strided or device tensor is
    copied once, by the copy into staging), with no intermediate buffer for whole tensors."""
    if nbytes == 0:
        return
    if type(tensor).__module__.startswith("torch"):
        import torch

        dst = torch.frombuffer(buf, dtype=torch.uint8, count=nbytes, offset=offset)
        src = tensor.detach()
        if tensor_offset == 0 and nbytes == spec.trainer_bytes:
            dst.view(src.dtype).view(src.shape).copy_(src)
        else:
            flat = src.contiguous().reshape(-1).view(torch.uint8)
            dst.copy_(flat[tensor_offset:tensor_offset + nbytes])
        return
    import numpy as np

    arr = np.asarray(tensor)
    np_dtype = np.dtype(DTYPES[spec.trainer_dtype][2])
    if arr.dtype.itemsize != np_dtype.itemsize:
        raise UsageError(f"tensor {spec.name}: {arr.dtype} does not hold {spec.trainer_dtype}")
    if tensor_offset == 0 and nbytes == spec.trainer_bytes:
        dst = np.ndarray(spec.shape, dtype=np_dtype, buffer=buf, offset=offset)
        np.copyto(dst, arr.view(np_dtype) if arr.dtype != np_dtype else arr, casting="no")
    else:
        dst = np.ndarray((nbytes,), dtype=np.uint8, buffer=buf, offset=offset)
        flat = np.ascontiguousarray(arr).reshape(-1).view(np.uint8)
        np.copyto(dst, flat[tensor_offset:tensor_offset + nbytes])


class RankPublish:
    """One rank's walk over one generation (see the trainer protocol): tensors this rank's node
    is assigned go into byte-bounded batches of staging, each handed over with one call, up to
    ``in_flight`` batches pending; after a failure the walk goes on (collective order) but hands
    nothing more over. Not thread safe: one per rank and generation."""

    def __init__(self, client: PublisherClient, manifest: Manifest, opened: OpenedGeneration,
                 stage_all: bool, after_staging: Callable[[], None] | None) -> None:
        self.c = client
        self.manifest = manifest
        self.opened = opened
        self.model = manifest.model
        self.generation = opened.generation
        self.stage_all = stage_all
        self.after_staging = after_staging
        self.failure: str | None = None
        self.batches = 0
        self.bytes = 0
        self.first_hand_over = 0.0
        self._next = 0
        self._open: Reservation | None = None
        self._cursor = 0
        self._staged: list[dict[str, Any]] = []
        self._ahead: list[tuple[Reservation, list[dict[str, Any]]]] = []
        self._pending: list[Future[dict[str, Any]]] = []
        self._pool = ThreadPoolExecutor(client.in_flight, thread_name_prefix="hand-over")
        self._remaining = 0
        self._max_batch = 0
        self._node = ""
        try:
            self._node = client.node
            client.open(self.model, self.generation)
            self._max_batch = int(field(client.staging_info(), "maxBatchBytes",
                                        "read staging info"))
            self._map = client.staging_map()
            for t in manifest.tensors:
                if self.wants(t.name):
                    self._remaining += sum(_align(p.nbytes) for p in self._parts(t))
        except (RelayError, OSError, ValueError) as e:
            self._fail(e)

    def wants(self, name: str) -> bool:
        """Whether this rank's node publishes ``name`` (the others only join its collectives)."""
        return self.opened.node_of_tensor.get(name) == self._node

    def add(self, name: str, tensor: Any) -> bool:
        """The next tensor of the manifest; returns True if this rank staged it."""
        if self._next >= len(self.manifest.tensors) or \
                self.manifest.tensors[self._next].name != name:
            expected = self.manifest.tensors[self._next].name \
                if self._next < len(self.manifest.tensors) else "nothing (all tensors walked)"
            raise UsageError(f"tensor {name} out of manifest order: expected {expected}")
        spec = self.manifest.tensors[self._next]
        self._next += 1
        if self.failure is not None or not self.wants(name):
            return False
        try:
            if callable(tensor):
                tensor = tensor()
            self._check(spec, tensor)
            for part in self._parts(spec):
                aligned = _align(part.nbytes)
                if self._open is not None and self._cursor + aligned > self._open.size:
                    self._close()
                if self._open is None:
                    self._open = self.c.reserve(max(ALIGN, min(self._max_batch, self._remaining)),
                                                self.model, self.generation,
                                                min_bytes=max(ALIGN, aligned))
                    self._cursor = 0
                at = self._open.offset + self._cursor
                write_into(self._map, at, spec, tensor, part.tensor_offset, part.nbytes)
                # Mandatory: the publisher refuses a part without the CRC32C of the bytes as this
                # rank wrote them (400 tensor-checksum-required), summed from staging itself.
                checksum = format_crc32c(crc32c(memoryview(self._map)[at:at + part.nbytes]))
                self._staged.append({"name": spec.name, "dtype": spec.trainer_dtype,
                                     "shape": list(spec.shape), "stagingOffset": at,
                                     "bytes": part.nbytes, "tensorOffset": part.tensor_offset,
                                     "checksum": checksum})
                self._cursor += aligned
                self._remaining -= aligned
            return True
        except (RelayError, OSError, ValueError, TypeError, RuntimeError) as e:
            self._fail(e)
            return False

    def finish(self) -> RankResult:
        """Hands over what is left, waits for every batch, then finishes this node's part."""
        if self._next != len(self.manifest.tensors) and self.failure is None:
            self._fail(ValueError(f"walk ended after {self._next} of "
                                  f"{len(self.manifest.tensors)} tensors"))
        try:
            self._close()
        except (RelayError, OSError) as e:
            self._fail(e)
        if self.stage_all:
            try:
                if self.after_staging is not None:
                    self.after_staging()
            except Exception as e:  # a broken barrier: another rank failed
                self._fail(e)
            for reservation, staged in self._ahead:
                if self.failure is None:
                    self._submit(reservation, staged)
                    self._drain(self.c.in_flight)
                else:
                    self._release_quietly(reservation)
        self._drain(0)
        self._pool.shutdown(wait=True)
        status = None
        try:
            status = self.c.finish(self.model, self.generation)
        except RelayError as e:
            self._fail(e)
        return RankResult(self._node, status, self.failure, self.batches, self.bytes,
                          self.first_hand_over)

    # ---- internals ------------------------------------------------------------------------------
    def _check(self, spec: TensorSpec, tensor: Any) -> None:
        try:
            shape = tuple(int(d) for d in tensor.shape)
        except (AttributeError, TypeError) as e:
            raise UsageError(f"tensor {spec.name}: a {type(tensor).__name__} is not a tensor "
                             "(a torch tensor or a numpy array)") from e
        if shape != spec.shape:
            raise UsageError(f"tensor {spec.name}: shape {shape}, manifest says {spec.shape}")
        if type(tensor).__module__.startswith("torch"):
            if dtype_of(tensor) != spec.trainer_dtype:
                raise UsageError(f"tensor {spec.name}: dtype {tensor.dtype}, manifest says "
                                 f"{spec.trainer_dtype}")

    def _parts(self, spec: TensorSpec) -> list[_Part]:
        total = spec.trainer_bytes
        if total <= self._max_batch:
            return [_Part(spec, 0, total)]
        tw, rw = element_bytes(spec.trainer_dtype), element_bytes(spec.rollout_dtype)
        parts, start, size = [], 0, 0
        for f in self.manifest.fragments_of(spec):
            b = f.rollout_bytes // rw * tw
            if b > self._max_batch:
                raise UsageError(f"fragment {f.fragment} ({b} staged bytes) exceeds the "
                                 f"publisher's batch bound {self._max_batch}; lower "
                                 "maxFragmentBytes or raise relay.staging.max-batch-bytes")
            if size > 0 and size + b > self._max_batch:
                parts.append(_Part(spec, start, size))
                start, size = start + size, 0
            size += b
        parts.append(_Part(spec, start, size))
        return parts

    def _close(self) -> None:
        if self._open is None:
            return
        reservation, staged = self._open, self._staged
        self._open, self._staged = None, []
        if not staged:
            self._release_quietly(reservation)
        elif self.stage_all:
            self._ahead.append((reservation, staged))
        else:
            self._drain(self.c.in_flight - 1)
            if self.failure is not None:
                self._release_quietly(reservation)
                return
            self._submit(reservation, staged)

    def _submit(self, reservation: Reservation, staged: list[dict[str, Any]]) -> None:
        if not self.first_hand_over:
            self.first_hand_over = time.perf_counter()
        self._pending.append(self._pool.submit(
            self.c.hand_over, self.model, self.generation, reservation.reservation_id, staged))

    def _drain(self, keep: int) -> None:
        while len(self._pending) > max(0, keep):
            f = self._pending.pop(0)
            try:
                r = f.result()
                self.batches += 1
                self.bytes += int(field(r, "bytesStaged", "hand over batch"))
            except (RelayError, ValueError, TypeError) as e:
                self._fail(e)

    def _fail(self, e: BaseException) -> None:
        if self.failure is None:
            self.failure = str(e) or repr(e)
        if self._open is not None:
            self._release_quietly(self._open)
            self._open, self._staged = None, []

    def _release_quietly(self, reservation: Reservation) -> None:
        try:
            self.c.release(reservation.reservation_id)
        except RelayError as e:
            # reclaimed by the publisher after its reservation timeout
            _log.debug("release of reservation %s failed: %s", reservation.reservation_id, e)


def publish_generation(control: ControlClient, manifest: Manifest, trainer_step: int,
                       ranks: Mapping[str, PublisherClient],
                       tensors_of: Callable[[str], Mapping[str, Any] | Iterable[tuple[str, Any]]],
                       *, stage_all: bool = False) -> tuple[int, list[RankResult], float]:
    """A coordinator driving one rank per node in threads (as the Java TrainerSession): open,
    every rank walks its tensors, then commit, or abort and raise :class:`PublishFailedError`.
    Returns (generation, rank results, perf_counter at commit)."""
    if not ranks:
        raise UsageError("publish_generation needs at least one rank")
    opened = control.open_generation(manifest, trainer_step, ranks.keys())
    barrier = threading.Barrier(len(ranks), timeout=600)
    results: dict[str, RankResult] = {}

    def run(node: str, client: PublisherClient) -> None:
        try:
            results[node] = client.publish(manifest, opened, tensors_of(node), stage_all=stage_all,
                                           after_staging=barrier.wait)
        except Exception as e:
            barrier.abort()
            results[node] = RankResult(node, None, repr(e), 0, 0, 0.0)

    threads = [threading.Thread(target=run, args=(n, c), name=f"rank-{n}")
               for n, c in ranks.items()]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    ordered = [results[n] for n in ranks]
    failures = {r.node: r.failure for r in ordered if r.failure}
    if not failures:
        try:
            control.commit(manifest.model, opened.generation)
            _log.info("generation %d of %s committed (step %d, %d rank(s))", opened.generation,
                      manifest.model, trainer_step, len(ordered))
            return opened.generation, ordered, time.perf_counter()
        except RelayError as e:
            failures["commit"] = f"commit refused: {e}"
    reason = "; ".join(f"{n}: {f}" for n, f in failures.items())
    _log.warning("generation %d of %s failed; aborting it: %s", opened.generation,
                 manifest.model, reason)
    try:
        control.abort(manifest.model, opened.generation, reason)
    except RelayError as e:
        raise PublishFailedError(opened.generation, f"generation {opened.generation} failed "
                                 f"({reason}) and its abort failed too: {e}", failures) from e
    raise PublishFailedError(opened.generation, f"generation {opened.generation} aborted, the "
                             f"previous one stays active: {reason}", failures)


__all__ = ["ControlClient", "OpenedGeneration", "PublisherClient", "RankPublish", "RankResult",
           "publish_generation", "write_into", "ConflictError", "StagingFullError"]
