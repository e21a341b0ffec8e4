"""Clients of the real Mooncake from Python: :class:`AgentClient` drives a
:mod:`weight_relay.mooncake_agent` process (start it with :meth:`AgentClient.start`), and
:func:`register_receive_buffer` is what a rollout worker that has a Transfer Engine of its own
(vLLM's or SGLang's, ``mooncake.engine.TransferEngine``) calls to offer a buffer as a receive
buffer that loaders write into one-sided.

:class:`SharedFile` is the memory a caller shares with its agent: a file in ``/dev/shm`` both map;
the agent registers its mapping with Mooncake, the caller reads and writes its own.
"""

from __future__ import annotations

import ctypes
import json
import logging
import mmap
import os
import select
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .errors import MapError, UsageError
from .mooncake_agent import (
    AgentGoneError,
    AgentProtocolError,
    MooncakeOperationError,
    MooncakeSetupError,
    check_address,
    error_from,
    recv_frame,
    send_frame,
)

_log = logging.getLogger("weight_relay.mooncake")


class SharedFile:
    """A shared-memory file of ``size`` bytes at ``path`` (created, or opened when it exists),
    mapped here; :meth:`close` (idempotent; also on leaving a ``with`` block) unlinks it when this
    object created it, and unmaps it.

    ``view`` is the mapping: what is read from it is valid until :meth:`close`. A numpy array or
    torch tensor made over it (``np.frombuffer(shared.view, ...)``) keeps the memory mapped while
    it lives: :meth:`close` then leaves the unmapping to the last of them."""

    def __init__(self, path: str, size: int) -> None:
        self.path = path
        self.size = size
        self._created = not os.path.exists(path)
        self._closed = False
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
            try:
                if os.fstat(fd).st_size < size:
                    os.ftruncate(fd, size)
                self.view = mmap.mmap(fd, size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
            finally:
                os.close(fd)
        except (OSError, ValueError) as e:  # ValueError: a size mmap refuses (0, negative)
            if self._created:
                self._unlink()
            raise MapError(getattr(e, "errno", None),
                           f"cannot create and map {size} bytes at {path}: "
                           f"{getattr(e, 'strerror', None) or e}") from e

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._created:
            self._unlink()
        try:
            self.view.close()
        except BufferError:
            pass  # a live array over the mapping holds it: unmapped when the last one goes

    @property
    def closed(self) -> bool:
        return self._closed

    def _unlink(self) -> None:
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass

    def __enter__(self) -> SharedFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@dataclass(frozen=True)
class Ready:
    """What an agent said when it was ready: its pid, the wheel version, its store segment (the
    name a put prefers to stay local), the endpoint :meth:`AgentClient.replicas` names for
    replicas in that segment ("" for a reading client without one) and its Transfer Engine
    segment (the target name of one-sided writes into its memory)."""

    pid: int
    version: str
    store_segment: str
    store_endpoint: str
    engine_segment: str
    socket: str


class AgentClient:
    """One connection to an agent; commands are sent one at a time (use one client per thread).
    Every command whose agent dies or closes the socket raises :class:`AgentGoneError` naming the
    agent; an agent started by :meth:`start` is also checked for its exit status, and killed when
    it does not answer within ``command_timeout`` seconds (never a hang)."""

    def __init__(self, socket_path: str, process: subprocess.Popen[bytes] | None = None,
                 ready: Ready | None = None, command_timeout: float = 600.0) -> None:
        self.socket_path = socket_path
        self.process = process
        self.ready = ready
        self.command_timeout = command_timeout
        self._next_id = 0
        self._lock = threading.Lock()
        self._closed = False
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self._sock.connect(socket_path)
        except OSError as e:
            self._sock.close()
            raise AgentGoneError(f"no Mooncake agent answers at {socket_path}: {e}") from e
        self._sock.settimeout(command_timeout)

    @classmethod
    def start(cls, socket_path: str, master: str, hostname: str = "127.0.0.1",
              segment_size: int = 0, metadata: str = "P2PHANDSHAKE", timeout: float = 60.0,
              python: str = sys.executable, extra_args: Sequence[str] = (),
              env: dict[str, str] | None = None, log: Any = None,
              prefix: Sequence[str] = (), command_timeout: float = 600.0) -> AgentClient:
        """Starts an agent as a child process and waits for its readiness line (at most
        ``timeout`` seconds); its refusal to start is raised as the typed error it printed.
        ``prefix`` runs it through another command (``ip netns exec NAME``: its network
        namespace; the unix socket is reachable from any)."""
        cmd = [*prefix, python, "-m", "weight_relay.mooncake_agent", "--socket", socket_path,
               "--master", master, "--hostname", hostname, "--metadata", metadata,
               "--segment-size", str(segment_size), *extra_args]
        try:
            process = subprocess.Popen(cmd, stdout=subprocess.PIPE,
                                       stderr=log or subprocess.DEVNULL, env=env)
        except OSError as e:
            raise MooncakeSetupError(f"cannot start the Mooncake agent ({' '.join(cmd)}): "
                                     f"{e}") from e
        assert process.stdout is not None
        deadline = time.monotonic() + timeout
        line = b""
        while not line.endswith(b"\n"):
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([process.stdout], [], [], left)[0]:
                process.kill()
                process.wait()
                raise MooncakeSetupError(
                    f"the Mooncake agent (pid {process.pid}) was not ready within {timeout} s")
            chunk = os.read(process.stdout.fileno(), 4096)
            if not chunk:
                code = process.wait()
                raise AgentGoneError(
                    f"the Mooncake agent (pid {process.pid}) exited with {code} before it was "
                    "ready")
            line += chunk
        try:
            body = json.loads(line)
            refusal = body.get("error")
            if refusal is None:
                r = body["ready"]
                ready = Ready(int(r["pid"]), str(r["version"]), str(r["store_segment"]),
                              str(r["store_endpoint"]), str(r["engine_segment"]),
                              str(r["socket"]))
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            process.kill()
            process.wait()
            raise AgentProtocolError(f"the Mooncake agent (pid {process.pid}) started with a line "
                                     f"that is not its readiness line: {line[:300]!r}") from e
        if refusal is not None:
            process.wait()
            raise error_from(refusal if isinstance(refusal, dict) else {"message": str(refusal)})
        _log.info("Mooncake agent pid %d (wheel %s) ready at %s: store segment %s, Transfer "
                  "Engine segment %s", ready.pid, ready.version, socket_path, ready.store_segment,
                  ready.engine_segment)
        try:
            return cls(socket_path, process, ready, command_timeout)
        except AgentGoneError:
            process.kill()
            process.wait()
            raise

    def describe(self) -> str:
        pid = self.ready.pid if self.ready else "?"
        return f"Mooncake agent pid {pid} at {self.socket_path}"

    def _gone(self, op: str, cause: BaseException | None,
              what: str = "died") -> AgentGoneError:
        status = ""
        if self.process is not None:
            try:
                code = self.process.wait(timeout=2)
                status = f" (exit status {code})"
            except subprocess.TimeoutExpired:
                status = " (still running, but its socket closed)"
        error = AgentGoneError(f"{self.describe()} {what} during '{op}'{status}: the "
                               "command's outcome is unknown")
        _log.warning("%s", error)
        error.__cause__ = cause
        return error

    def call(self, op: str, **args: Any) -> dict[str, Any]:
        """Sends one command and returns the agent's answer; a failed command raises its typed
        error."""
        with self._lock:
            self._next_id += 1
            cmd_id = self._next_id
            try:
                send_frame(self._sock, {"id": cmd_id, "op": op, **args})
                answer = recv_frame(self._sock)
            except TimeoutError as e:
                # a stuck agent: kill it, so the command's outcome cannot change any more
                if self.process is not None:
                    self.process.kill()
                raise self._gone(op, e, f"did not answer within {self.command_timeout} s and "
                                        "was killed") from e
            except OSError as e:
                raise self._gone(op, e) from e
            if answer is None:
                raise self._gone(op, None)
        if answer.get("id") != cmd_id:
            raise AgentProtocolError(f"{self.describe()} answered command {answer.get('id')} "
                                     f"to command {cmd_id}")
        if not answer.get("ok"):
            raise error_from(answer.get("error") or {})
        return answer

    def _answer(self, op: str, name: str, **args: Any) -> list[Any]:
        """Field ``name`` of the answer to command ``op``: a list, or :class:`AgentProtocolError`
        (every command but ``map`` answers one list)."""
        value = self.call(op, **args).get(name)
        if not isinstance(value, list):
            raise AgentProtocolError(f"{self.describe()} answered '{op}' without a list "
                                     f"{name!r}: {value!r:.200}")
        return value

    # -- commands -----------------------------------------------------------------------------
    def ping(self) -> None:
        self.call("ping")

    def map(self, shared: SharedFile) -> tuple[int, int]:
        """Maps and registers ``shared`` in the agent: its buffer id and its address there."""
        r = self.call("map", path=shared.path, size=shared.size)
        try:
            return int(r["buffer"]), int(r["address"])
        except (KeyError, TypeError, ValueError) as e:
            raise AgentProtocolError(f"{self.describe()} answered 'map' without its buffer and "
                                     f"address: {r!r:.200}") from e

    def unmap(self, buffer: int) -> None:
        self.call("unmap", buffer=buffer)

    def put(self, buffer: int, keys: Sequence[str], offsets: Sequence[int],
            sizes: Sequence[int], preferred_segment: str | None = None,
            replica_num: int = 1, hard_pin: bool = True) -> None:
        """``batch_put_from`` of ``keys`` from ``buffer`` at ``offsets`` with
        ``ReplicateConfig{replica_num, preferred_segment (default: the agent's own),
        with_hard_pin}``; raises :class:`MooncakeOperationError` naming the first failed key."""
        codes = self._answer("put", "codes", buffer=buffer, keys=list(keys),
                             offsets=list(offsets), sizes=list(sizes),
                             preferred_segment=preferred_segment, replica_num=replica_num,
                             hard_pin=hard_pin)
        for key, code in zip(keys, codes, strict=True):
            if code != 0:
                raise MooncakeOperationError(
                    f"put of '{key}' failed with {code}", "put", int(code), key)

    def get_into_ranges(self, buffer: int,
                        reads: Sequence[tuple[str, Sequence[tuple[int, int, int]]]]
                        ) -> list[list[int]]:
        """``get_into_ranges`` of several objects into ``buffer``: per object ``(key, [(dst_offset,
        src_offset, length), ...])``; answers, per object and range, the bytes read or a negative
        Mooncake code (a failed range does not fail the others)."""
        body = [{"key": key, "dst": [r[0] for r in ranges], "src": [r[1] for r in ranges],
                 "len": [r[2] for r in ranges]} for key, ranges in reads]
        return [list(b) for b in self._answer("get_ranges", "bytes", buffer=buffer, reads=body)]

    def replicas(self, keys: Sequence[str]) -> list[list[str]]:
        """Per key, the transport endpoints (segments) of its memory replicas."""
        return [list(r) for r in self._answer("replicas", "replicas", keys=list(keys))]

    def local_replica_ratio(self, keys: Sequence[str]) -> float:
        """The share of ``keys`` whose replicas include one in this agent's own segment."""
        if not keys:
            return 0.0
        own = self.ready.store_endpoint if self.ready else ""
        return sum(own in r for r in self.replicas(keys)) / len(keys) if own else 0.0

    def exists(self, keys: Sequence[str]) -> list[bool]:
        return [x == 1 for x in self._answer("exists", "exists", keys=list(keys))]

    def remove(self, keys: Sequence[str], force: bool = False) -> list[int]:
        """Per key, 0 or Mooncake's code (``OBJECT_HAS_LEASE`` -706 while a read's lease runs)."""
        return [int(c) for c in self._answer("remove", "codes", keys=list(keys), force=force)]

    def write(self, buffer: int, target: str,
              ranges: Sequence[tuple[int, int, int]],
              notify: tuple[str, str] | None = None) -> None:
        """Transfer Engine one-sided write of ``(local_offset, remote_address, length)`` ranges
        of ``buffer`` into segment ``target`` (another engine's ``host:port``); with ``notify``
        ``(name, msg)``, the target's Transfer Engine receives that notify once the bytes landed."""
        args: dict[str, Any] = {}
        if notify is not None:
            args["notify"] = {"name": notify[0], "msg": notify[1]}
        self.call("write", buffer=buffer, target=target, local=[r[0] for r in ranges],
                  remote=[r[1] for r in ranges], len=[r[2] for r in ranges], **args)

    def notifies(self) -> list[tuple[str, str]]:
        """The ``(name, msg)`` notifies delivered to this agent's Transfer Engine since the last
        call."""
        return [(str(n["name"]), str(n["msg"])) for n in self._answer("notifies", "notifies")]

    def sizes(self, keys: Sequence[str]) -> list[int]:
        """Per key, the object's size in bytes (``get_size``), or Mooncake's negative code."""
        return [int(n) for n in self._answer("sizes", "sizes", keys=list(keys))]

    def read(self, buffer: int, target: str,
             ranges: Sequence[tuple[int, int, int]]) -> None:
        """Transfer Engine one-sided read of ``(local_offset, remote_address, length)`` ranges
        from segment ``target`` (another engine's ``host:port``) into ``buffer``."""
        self.call("read", buffer=buffer, target=target, local=[r[0] for r in ranges],
                  remote=[r[1] for r in ranges], len=[r[2] for r in ranges])

    def shutdown(self) -> None:
        try:
            self.call("shutdown")
        except AgentGoneError:
            pass
        self.close()

    def close(self) -> None:
        """Closes the connection and kills an agent this client started that still runs;
        idempotent (use :meth:`shutdown` to stop the agent cleanly first)."""
        if self._closed:
            return
        self._closed = True
        self._sock.close()
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()

    def __enter__(self) -> AgentClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@dataclass(frozen=True)
class ReceiveBuffer:
    """A buffer a worker's own Transfer Engine registered, as loaders address it: the engine's
    segment name (``host:rpc_port``), the buffer's address in the worker and its size."""

    segment: str
    address: int
    size: int

    def registration(self, buffer_id: str, segment: str, size: int | None = None
                     ) -> dict[str, Any]:
        """A buffer of this memory as a worker's registration declares it to its loader (the
        ``ReceiveBuffer`` of ``loader.yaml``): buffer ``buffer_id`` of ``size`` bytes (default:
        the whole memory) in data-plane segment ``segment`` (a name of the worker's own, which the
        loader publishes for this memory), held by the worker's Transfer Engine
        (``transferEngine``), so the loader creates no shared memory for it and every loader writes
        into it through Mooncake. Several buffers of one segment are packed in this memory as in
        any segment (registration order, each at a multiple of 4096: :func:`buffer_offsets`). Only
        a parameter-direct worker's buffers may be declared so, with the loaders on
        ``relay.dataplane.engine=mooncake``; :func:`weight_relay.direct_worker` does it with
        ``transfer_engine=``."""
        size = self.size if size is None else size
        if not buffer_id or not segment or not 0 < size <= self.size:
            raise UsageError(f"a receive buffer needs a buffer id, a segment name and a size in "
                             f"(0, {self.size}]: {buffer_id!r}, {segment!r}, {size}")
        return {"bufferId": buffer_id, "segment": segment, "size": size,
                "transferEngine": {"segment": self.segment, "address": self.address}}


def register_receive_buffer(engine: Any, hostname: str, address: int,
                            size: int) -> ReceiveBuffer:
    """Registers ``size`` bytes at ``address`` with ``engine`` (an initialized
    ``mooncake.engine.TransferEngine`` of the worker, started with local hostname ``hostname``) and
    answers what a loader needs to write into them one-sided (declare it with
    :meth:`ReceiveBuffer.registration`). Nothing of weight-relay runs in the worker besides this
    call: the bytes arrive through Mooncake alone. Raises :class:`UsageError` for an empty or
    negative range, :class:`MooncakeAddressError` for a hostname that is not an IP literal and
    :class:`MooncakeOperationError` when the engine refuses the memory."""
    check_address("the worker's Transfer Engine hostname", hostname,
                  ("0.0.0.0/0", "::/0"))
    if size <= 0 or address <= 0:
        raise UsageError(f"a receive buffer is a non-empty range at a real address: {size} bytes "
                         f"at 0x{address:x}")
    rc = engine.register_memory(address, size)
    if rc != 0:
        raise MooncakeOperationError(
            f"registering {size} bytes at 0x{address:x} with the worker's Transfer Engine failed",
            "register_memory", int(rc))
    return ReceiveBuffer(f"{hostname}:{engine.get_rpc_port()}", address, size)


def buffer_address(view: mmap.mmap) -> int:
    """The address of a writable mapping (to register it, or to name it as a remote address)."""
    return ctypes.addressof(ctypes.c_char.from_buffer(view))
