"""The engine side: register workers and receive buffers with the loader-service beside the
engine instance, start an update after draining, follow it, and see the received weights in
place: the compat image as ``{name: tensor}`` and parameter-direct shards as strided views, all
over the shared mapping (no copy).

How long a view stays valid: a tensor :meth:`LoaderClient.compat_tensors` or
:meth:`LoaderClient.direct_tensors` hands out is a view of the loader's receive buffer, not a
copy. It shows the bytes of the generation the instance holds until the next update of the
instance starts writing into that buffer (compat images and in-place direct buffers are written
during apply): copy what must outlive the next update, or take the views again after it. The
memory itself stays mapped while any view of it is alive, even after :meth:`LoaderClient.close`
or a re-registration that re-creates the segment (the old file is then unlinked but still
mapped), so a view never points at unmapped memory.
"""

from __future__ import annotations

import logging
import mmap
import os
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Any

from ._http import RestClient
from .answers import InstanceStatus, PlacedBuffer, UpdateProgress
from .errors import (
    ClosedError,
    MapError,
    NotFoundError,
    NotRegisteredError,
    ProtocolError,
    UnknownNameError,
    UpdateFailedError,
    UpdateInFlightError,
    UpdateTimeoutError,
    UsageError,
)
from .manifest import DTYPES, Manifest, SafetensorsLayout, element_bytes, parse_safetensors_header

if TYPE_CHECKING:
    from .mooncake_client import ReceiveBuffer

COMPAT_BUFFER = "safetensors"
_log = logging.getLogger("weight_relay.loader")
_LONG_POLL_S = 10.0  # the most the loader holds a long poll (its contract: waitMs <= 10000)
_ST_TO_DTYPE = {v[1]: k for k, v in DTYPES.items()}


@dataclass(frozen=True)
class DirectFragment:
    """One N-D box of a tensor a direct worker holds: element ``index`` lands at
    ``buffer_offset + sum(index[d] * strides[d])`` of buffer ``buffer_id`` (byte strides)."""

    tensor: str
    offset: tuple[int, ...]
    shape: tuple[int, ...]
    buffer_id: str
    buffer_offset: int
    strides: tuple[int, ...]

    def to_json(self) -> dict[str, Any]:
        return {"tensor": self.tensor, "offset": list(self.offset), "shape": list(self.shape),
                "bufferId": self.buffer_id, "bufferOffset": self.buffer_offset,
                "strides": list(self.strides)}

    def end(self, element: int) -> int:
        if any(d == 0 for d in self.shape):
            return self.buffer_offset
        return self.buffer_offset + element + sum(
            (d - 1) * s for d, s in zip(self.shape, self.strides, strict=True))


def compat_worker(worker_id: str, node: str, segment: str, manifest: Manifest, *, rank: int = 0,
                  nic: str = "nic0") -> dict[str, Any]:
    """A compat worker: one buffer exactly the size of the manifest's safetensors image."""
    return {"workerId": worker_id, "rank": rank, "node": node, "nic": nic, "mode": "compat",
            "buffers": [{"bufferId": COMPAT_BUFFER, "segment": segment,
                         "size": SafetensorsLayout.of(manifest).image_bytes}]}


def direct_worker(worker_id: str, node: str, segment: str, manifest: Manifest,
                  fragments: Sequence[DirectFragment], *, rank: int = 0,
                  nic: str = "nic0", transfer_engine: ReceiveBuffer | None = None
                  ) -> dict[str, Any]:
    """A direct worker; each buffer is sized to the furthest byte its fragments reach.

    With ``transfer_engine`` (what :func:`weight_relay.mooncake_client.register_receive_buffer`
    answered), the worker receives into memory it registered with its own Mooncake Transfer
    Engine: its buffers lie in that memory at :func:`buffer_offsets` (in the order their fragments
    first name them), declared with
    :meth:`~weight_relay.mooncake_client.ReceiveBuffer.registration` in ``segment``; buffers that
    reach past the memory raise :class:`UsageError`."""
    sizes: dict[str, int] = {}
    for f in fragments:
        elt = element_bytes(manifest.spec(f.tensor).rollout_dtype)
        sizes[f.buffer_id] = max(sizes.get(f.buffer_id, 1), f.end(elt))
    if transfer_engine is None:
        buffers = [{"bufferId": b, "segment": segment, "size": s} for b, s in sizes.items()]
    else:
        offsets = buffer_offsets(sizes)
        end = max(offsets[b] + s for b, s in sizes.items())
        if end > transfer_engine.size:
            raise UsageError(f"worker {worker_id}: its buffers {sorted(sizes)} reach byte {end} "
                             f"of segment {segment}, the registered memory holds "
                             f"{transfer_engine.size}")
        buffers = [transfer_engine.registration(b, segment, s) for b, s in sizes.items()]
    return {"workerId": worker_id, "rank": rank, "node": node, "nic": nic, "mode": "direct",
            "buffers": buffers, "fragments": [f.to_json() for f in fragments]}


BUFFER_ALIGNMENT = 4096


def buffer_offsets(sizes: Mapping[str, int]) -> dict[str, int]:
    """Where the buffers of one segment lie in it, by buffer id: packed in the order given, each at
    a multiple of :data:`BUFFER_ALIGNMENT`, as the loader places them (``InstanceStatus.buffers``
    says so after registration; a worker whose segment is memory of its own Transfer Engine needs
    it before)."""
    out, cursor = {}, 0
    for buffer_id, size in sizes.items():
        cursor = -(-cursor // BUFFER_ALIGNMENT) * BUFFER_ALIGNMENT
        out[buffer_id] = cursor
        cursor += size
    return out


def tensor_parallel_fragments(manifest: Manifest, tp: int, rank: int,
                              split_dims: Mapping[str, int] | None = None,
                              buffer_id: str = "params", pad_rows: Mapping[str, int] | None = None,
                              align: int = 64) -> list[DirectFragment]:
    """The shards of tensor-parallel rank ``rank`` of ``tp``: each tensor split along
    ``split_dims[name]`` (absent or -1: replicated; a dimension not divisible by tp is cut
    unevenly), packed in one buffer at ``align``-ed offsets, row-major; ``pad_rows[name]`` extra
    elements per innermost row give that tensor a padded stride (as engines that pad do)."""
    out, cursor = [], 0
    for t in manifest.tensors:
        shape, offset = list(t.shape), [0] * len(t.shape)
        d = (split_dims or {}).get(t.name, -1)
        if d is not None and d >= 0 and shape:
            n = shape[d]
            lo, hi = n * rank // tp, n * (rank + 1) // tp
            offset[d], shape[d] = lo, hi - lo
        elt = element_bytes(t.rollout_dtype)
        pad = (pad_rows or {}).get(t.name, 0)
        strides = [0] * len(shape)
        step = elt
        for i in range(len(shape) - 1, -1, -1):
            strides[i] = step
            step *= (shape[i] + (pad if i == len(shape) - 1 else 0))
        cursor = (cursor + align - 1) // align * align
        f = DirectFragment(t.name, tuple(offset), tuple(shape), buffer_id, cursor, tuple(strides))
        out.append(f)
        cursor = max(cursor + 1, f.end(elt))
    return out


class _Mappings:
    """Shared-memory files mapped once each (read-write: the engine owns its receive buffers). A
    path whose file was replaced (a re-registration recreates a segment under the same name) is
    mapped again: the mapping is keyed by the file's identity, not only its path."""

    def __init__(self) -> None:
        self._maps: dict[str, tuple[tuple[int, int, int], mmap.mmap]] = {}
        self._lock = threading.Lock()
        self._closed = False

    def get(self, path: str) -> mmap.mmap:
        with self._lock:
            if self._closed:
                raise ClosedError("this LoaderClient is closed; make a new one")
            try:
                fd = os.open(path, os.O_RDWR)
                try:
                    st = os.fstat(fd)
                    ident = (st.st_dev, st.st_ino, st.st_size)
                    held = self._maps.get(path)
                    if held is not None and held[0] == ident:
                        return held[1]
                    m = mmap.mmap(fd, st.st_size, mmap.MAP_SHARED,
                                  mmap.PROT_READ | mmap.PROT_WRITE)
                finally:
                    os.close(fd)
            except (OSError, ValueError) as e:  # mmap refuses an empty file with ValueError
                raise MapError(getattr(e, "errno", None),
                               f"cannot map the receive buffer file {path} (the engine must run "
                               f"on its loader's node): {getattr(e, 'strerror', None) or e}"
                               ) from e
            self._maps[path] = (ident, m)  # an older mapping stays valid for views still using it
            return m

    def close(self) -> None:
        """Drops this client's hold on every mapping: each is unmapped as soon as no view of it
        is left (at once when there is none). Never ``mmap.close()``: a numpy array over a
        mapping holds a reference to it, not a buffer export, so closing the mapping under it
        would leave the array pointing at unmapped memory."""
        with self._lock:
            self._closed = True
            self._maps = {}


class LoaderClient:
    """One engine instance's client of its loader-service. Timeouts and polling as the Java lab
    engine: ``timeout`` per call, an update followed with long polls (the loader answers as soon
    as the update ends or waits at ``FETCHED`` for the engine, or after at most 10 s; ``poll``
    seconds apart only when an answer came early without either), no retry in place (a failed
    update is reported, never retried here). Polling every few milliseconds instead took the
    loader's cores from the bytes it moves.

    It maps the instance's receive buffers on first use: use it as a context manager, or call
    :meth:`close` (idempotent), when the engine is done with it. Thread safe.
    """

    def __init__(self, loader_url: str, token: str | None = None, timeout: float = 60.0,
                 poll: float = 0.01) -> None:
        self.rest = RestClient(loader_url, token, timeout, "loader")
        self.timeout = timeout
        self.poll = poll
        self._maps = _Mappings()
        self._closed = False

    def __enter__(self) -> LoaderClient:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        """Unmaps the receive buffers once no view uses them (see the module's note on views);
        idempotent. The instance stays registered: :meth:`teardown` ends it."""
        if not self._closed:
            self._closed = True
            self._maps.close()

    @property
    def closed(self) -> bool:
        return self._closed

    # ---- registration ---------------------------------------------------------------------------
    def register(self, instance_id: str, model: str, group: str, node: str,
                 workers: Iterable[Mapping[str, Any]], direct_install: str = "inPlace"
                 ) -> InstanceStatus:
        """``PUT /api/v1/instance``: a re-registration starts a new epoch.

        ``direct_install`` says how direct workers take a new generation: ``"inPlace"`` (into
        the weights the engine serves from: drain, then :meth:`update`) or ``"staged"`` (into
        the loader's copy while the engine serves from ``serving_shm_path``: :meth:`fetch`
        while serving, then drain and :meth:`install`; costs ``staged_bytes`` more memory)."""
        if direct_install not in ("inPlace", "staged"):
            raise UsageError(f"direct_install is 'inPlace' or 'staged', not {direct_install!r}")
        status = InstanceStatus.from_json(self.rest.call("PUT", "/api/v1/instance", {
            "instanceId": instance_id, "model": model, "group": group, "node": node,
            "directInstall": direct_install, "workers": list(workers)},
            f"register instance {instance_id}"))
        _log.info("registered instance %s of %s (group %s, node %s): epoch %d, %d worker(s)",
                  instance_id, model, group, node, status.epoch, len(status.workers))
        return status

    def status(self) -> InstanceStatus:
        return InstanceStatus.from_json(self.rest.call("GET", "/api/v1/instance", None,
                                                       "read instance"))

    def teardown(self) -> None:
        self.rest.call("DELETE", "/api/v1/instance", None, "tear down instance")
        _log.info("instance of %s torn down", self.rest.base_url)

    # ---- updates ------------------------------------------------------------------------------
    def start_update(self, generation: int | None = None, timeout_s: int = 300
                     ) -> UpdateProgress:
        """Call once the engine has drained in-flight requests. None means the active one.
        Returns the update as it started; follow it by its ``update_id``."""
        body: dict[str, Any] = {"timeoutSeconds": int(max(1, timeout_s))}
        if generation is not None:
            body["generation"] = int(generation)
        started = UpdateProgress.from_json(self.rest.call("POST", "/api/v1/updates", body,
                                                          "start update"))
        _log.info("update %s to generation %d started", started.update_id, started.generation)
        return started

    def progress(self, update_id: str, wait_s: float = 0.0) -> UpdateProgress:
        """The update's progress now or, with ``wait_s``, once it ended or waits at ``FETCHED``
        for the engine, at most ``wait_s`` seconds (10 at most: the loader's long poll)."""
        wait_ms = int(min(wait_s, _LONG_POLL_S, self.timeout - 1.0) * 1000)
        query = f"?waitMs={wait_ms}" if wait_ms > 0 else ""
        return UpdateProgress.from_json(self.rest.call(
            "GET", f"/api/v1/updates/{update_id}{query}", None, f"read update {update_id}"))

    def _follow(self, update_id: str, end: float) -> UpdateProgress:
        """One long poll of the update, up to ``end`` (a monotonic time); a short pause when the
        loader answered early with the update still running (never waits at ``FETCHED``)."""
        asked = time.monotonic()
        p = self.progress(update_id, max(0.0, end - asked))
        if p.running and not p.fetched and time.monotonic() - asked < self.poll:
            time.sleep(self.poll)
        return p

    def wait(self, update_id: str, deadline_s: float = 600.0) -> UpdateProgress:
        """Follows the update until it has an outcome.

        Raises :class:`UpdateTimeoutError` when it still runs after ``deadline_s`` seconds."""
        end = time.monotonic() + deadline_s
        while True:
            p = self._follow(update_id, end)
            if not p.running:
                return p
            if time.monotonic() > end:
                raise UpdateTimeoutError(
                    f"update {update_id} still {p.phase} after {deadline_s} s")

    def fetch(self, generation: int | None = None, timeout_s: int = 300) -> UpdateProgress:
        """The first half of an update the engine serves through (compat workers, or direct
        workers registered ``staged``): starts it to install on request and follows it until
        every loader of the group fetched and verified (phase ``FETCHED``). Keep serving
        meanwhile; then drain, pause and call :meth:`install` with the returned ``update_id``.

        Raises :class:`UpdateFailedError` when the update ended before that (``RESUMED_OLD``:
        nothing the engine serves from was touched; it never paused, serve on)."""
        body: dict[str, Any] = {"timeoutSeconds": int(max(1, timeout_s)), "install": "onRequest"}
        if generation is not None:
            body["generation"] = int(generation)
        started = UpdateProgress.from_json(self.rest.call("POST", "/api/v1/updates", body,
                                                          "start update"))
        end = time.monotonic() + timeout_s + 60
        while True:
            p = self._follow(started.update_id, end)
            if p.fetched:
                _log.info("update %s to generation %d fetched in %.3f s", p.update_id,
                          p.generation, p.fetch_s or 0.0)
                return p
            if not p.running:
                _log.warning("update %s to generation %d ended %s before its install: %s "
                             "(failing peer %s)", p.update_id, p.generation, p.outcome, p.error,
                             p.failing_peer)
                raise UpdateFailedError(p)
            if time.monotonic() > end:
                raise UpdateTimeoutError(
                    f"update {p.update_id} still {p.phase} after {timeout_s} s")

    def install(self, update_id: str, timeout_s: int = 300) -> UpdateProgress:
        """The second half: call once the engine has drained and paused. The loader makes the
        fetched bytes the engine's weights (a staged worker's serving copy is written now) and
        runs post-apply; at ``UPDATED`` a compat engine loads its image, and every engine
        resumes. Raises :class:`UpdateFailedError` unless the outcome is ``UPDATED``."""
        self.rest.call("POST", f"/api/v1/updates/{update_id}/install", None,
                       f"install update {update_id}")
        p = self.wait(update_id, timeout_s + 60)
        if not p.updated:
            _log.warning("install of update %s ended %s: %s (failing peer %s)", update_id,
                         p.outcome, p.error, p.failing_peer)
            raise UpdateFailedError(p)
        _log.info("update %s: generation %d installed, paused %.3f s", p.update_id,
                  p.generation, p.pause_s or 0.0)
        return p

    def decline(self, update_id: str, reason: str | None = None,
                timeout_s: int = 60) -> UpdateProgress:
        """Instead of :meth:`install`, when the engine cannot take the fetched update now (its
        weight-update session was refused, say): the update ends ``RESUMED_OLD`` at once, naming
        ``reason``, rather than holding the group until its deadline. The fetch wrote nothing the
        engine serves from: serve on with the old weights. Past the group's applied barrier another
        instance may have installed, so the group's session ends ``PAUSED_REBUILD``: to load this
        generation later, :meth:`register` again first (or update to a newer one). Returns the
        ended update's progress. Raises :class:`~weight_relay.errors.ConflictError` when the update
        is not waiting at ``FETCHED`` (its install was asked for, or it ended)."""
        body = None if reason is None else {"reason": str(reason)[:2000]}
        self.rest.call("POST", f"/api/v1/updates/{update_id}/decline", body,
                       f"decline update {update_id}")
        p = self.wait(update_id, timeout_s)
        _log.warning("update %s to generation %d declined by the engine: %s", update_id,
                     p.generation, p.error)
        return p

    def update(self, generation: int | None = None, timeout_s: int = 300) -> UpdateProgress:
        """Start and follow; raises :class:`UpdateFailedError` unless the outcome is UPDATED
        (``RESUMED_OLD``: the old weights are in place, serve on)."""
        p = self.wait(self.start_update(generation, timeout_s).update_id, timeout_s + 60)
        if not p.updated:
            _log.warning("update %s to generation %d ended %s: %s (failing peer %s)",
                         p.update_id, p.generation, p.outcome, p.error, p.failing_peer)
            raise UpdateFailedError(p)
        _log.info("update %s: generation %d in place", p.update_id, p.generation)
        return p

    # ---- the received weights, in place ------------------------------------------------------
    def _buffers(self, worker_id: str | None
                 ) -> tuple[Mapping[str, Any], dict[str, PlacedBuffer]]:
        st = self.status()  # fresh: another client of the instance may have registered since
        w = next((w for w in st.workers if worker_id in (None, w["workerId"])), None)
        if w is None:
            raise UnknownNameError(f"no worker {worker_id} in instance {st.instance_id}")
        bufs = {}
        for b in st.buffers:
            if b.worker_id == w["workerId"]:
                if not b.shm_path:
                    raise NotRegisteredError(f"buffer {b.buffer_id} of {w['workerId']} is not "
                                             "registered yet (before the first update)")
                bufs[b.buffer_id] = b
        return w, bufs

    def buffer_map(self, worker_id: str | None = None, buffer_id: str | None = None
                   ) -> tuple[mmap.mmap, int, int, str]:
        """(mapping of the buffer's segment file, buffer offset, size, shm path): of the serving
        copy for a staged direct worker (what its engine serves from, written only by an install),
        else of the receive segment."""
        w, bufs = self._buffers(worker_id)
        b = bufs.get(buffer_id) if buffer_id else (bufs.get(COMPAT_BUFFER) or
                                                   next(iter(bufs.values()), None))
        if b is None or b.shm_path is None:
            raise UnknownNameError(f"no buffer {buffer_id} for worker {w['workerId']}")
        path = b.serving_shm_path or b.shm_path
        return self._maps.get(path), b.offset, b.size, path

    def compat_tensors(self, worker_id: str | None = None, framework: str = "torch"
                       ) -> dict[str, Any]:
        """The compat image of ``worker_id`` as ``{name: tensor}``, every tensor a view of the
        shared mapping (``torch.frombuffer`` or a numpy array over it; numpy shows bf16 as its
        uint16 bits and fp8 as uint8). Valid until the next update starts: see the module.

        Raises :class:`UpdateInFlightError` while an update of the instance runs (started by any
        client): it writes the image in place, so views taken then could show a mix of two
        generations. The check is made before and after the views are built."""
        self._refuse_in_flight("compat_tensors")
        m, base, size, _ = self.buffer_map(worker_id, None)
        try:
            header, start = parse_safetensors_header(memoryview(m)[base:base + size])
        except UsageError as e:
            raise ProtocolError(f"the compat buffer of {worker_id or 'the instance'} holds no "
                                f"image: {e}") from e
        out: dict[str, Any] = {}
        for name, meta in header.items():
            if name == "__metadata__":
                continue
            try:
                dtype = _ST_TO_DTYPE[meta["dtype"]]
                lo, hi = meta["data_offsets"]
                shape = tuple(int(d) for d in meta["shape"])
            except (KeyError, TypeError, ValueError) as e:
                raise ProtocolError(f"the compat image's entry for {name} is not a safetensors "
                                    f"tensor this relay writes ({e}): {meta!r:.200}") from e
            out[name] = view(m, base + start + lo, dtype, shape, None, framework, hi - lo)
        self._refuse_in_flight("compat_tensors")
        return out

    def _refuse_in_flight(self, what: str) -> None:
        """Raises :class:`UpdateInFlightError` when the instance's current update is running."""
        try:
            current = UpdateProgress.from_json(self.rest.call(
                "GET", "/api/v1/updates/current", None, "read current update"))
        except NotFoundError:
            return  # no update has run yet
        if current.running:
            raise UpdateInFlightError(
                f"{what}: update {current.update_id} to generation {current.generation} is "
                f"{current.phase} and writes the receive buffers in place; take views once it "
                "ended", current.update_id, current.generation)

    def direct_tensors(self, worker_id: str | None = None, framework: str = "torch",
                       manifest: Manifest | Mapping[str, str] | None = None
                       ) -> list[tuple[Mapping[str, Any], Any]]:
        """Every registered fragment of a direct worker with a view of its bytes at the
        registered strides: ``[(fragment, tensor), ...]``. Registered fragments carry no dtype, so
        ``manifest`` (the published :class:`Manifest`, or ``{tensor: dtype}``) gives each
        tensor's rollout dtype; a stride width cannot tell bf16 from fp16, fp32 from int32, nor
        type a 0-d tensor, so nothing is guessed. Valid until the next update starts."""
        if manifest is None:
            raise UsageError("direct fragments carry no dtype: pass manifest= (the published "
                             "Manifest, or {tensor: dtype})")
        w, bufs = self._buffers(worker_id)
        out = []
        for f in w.get("fragments") or []:
            try:
                b = bufs[f["bufferId"]]
                tensor = f["tensor"]
                at, shape, strides = (b.offset + int(f["bufferOffset"]), tuple(f["shape"]),
                                      tuple(f["strides"]))
            except (KeyError, TypeError, ValueError) as e:
                raise ProtocolError(f"worker {w['workerId']}: a registered fragment that names no "
                                    f"buffer of it or lacks a field ({e}): {f!r:.300}") from e
            assert b.shm_path is not None  # _buffers refuses unplaced buffers
            # a staged worker serves from its serving copy, which only an install writes
            m = self._maps.get(b.serving_shm_path or b.shm_path)
            if isinstance(manifest, Manifest):
                dtype = manifest.spec(tensor).rollout_dtype
            elif tensor in manifest:
                dtype = manifest[tensor]
            else:
                raise UnknownNameError(f"no dtype for tensor {tensor} of worker {w['workerId']}")
            out.append((f, view(m, at, dtype, shape, strides, framework, None)))
        return out

    def image_file(self, worker_id: str | None = None) -> str:
        """The shared-memory file that holds exactly this compat worker's safetensors image (its
        buffer alone in its segment, at offset 0), for loaders that open a file by path."""
        m, base, size, path = self.buffer_map(worker_id, None)
        if base != 0 or len(m) < size:
            raise UsageError(f"the image of {worker_id} is not a file of its own ({path} at "
                             f"{base}); give the compat buffer a segment of its own")
        return path


def view(m: mmap.mmap, offset: int, dtype: str, shape: tuple[int, ...],
         strides: tuple[int, ...] | None, framework: str, nbytes: int | None) -> Any:
    """A tensor over ``m`` at ``offset`` with byte ``strides`` (None: row-major contiguous).
    A layout that reaches past the mapping is the registration's fault: :class:`ProtocolError`."""
    elt = element_bytes(dtype)
    numel = 1
    for d in shape:
        numel *= d
    try:
        return _view(m, offset, dtype, elt, numel, shape, strides, framework)
    except (ValueError, TypeError, RuntimeError) as e:
        if isinstance(e, UsageError):
            raise
        raise ProtocolError(f"a {dtype} view of shape {shape} (strides {strides}) at {offset} of "
                            f"a {len(m)}-byte mapping: {e}") from e


def _view(m: mmap.mmap, offset: int, dtype: str, elt: int, numel: int, shape: tuple[int, ...],
          strides: tuple[int, ...] | None, framework: str) -> Any:
    if framework == "numpy":
        import numpy as np

        return np.ndarray(shape, dtype=np.dtype(DTYPES[dtype][2]), buffer=m, offset=offset,
                          strides=strides)
    if framework != "torch":
        raise UsageError(f"framework {framework!r}: torch or numpy")
    try:
        import torch
    except ImportError as e:
        raise UsageError("framework='torch' needs torch installed (pip install "
                         "weight-relay[torch]); framework='numpy' needs only numpy") from e

    tdt = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16,
           "fp8_e4m3": getattr(torch, "float8_e4m3fn", torch.uint8), "int8": torch.int8,
           "int32": torch.int32, "int64": torch.int64}[dtype]
    if numel == 0:
        return torch.empty(shape, dtype=tdt)
    if strides is None:
        return torch.frombuffer(m, dtype=tdt, count=numel, offset=offset).view(shape)
    span = 1 + sum((d - 1) * (s // elt) for d, s in zip(shape, strides, strict=True))
    flat = torch.frombuffer(m, dtype=tdt, count=span, offset=offset)
    return flat.as_strided(shape, tuple(s // elt for s in strides))
