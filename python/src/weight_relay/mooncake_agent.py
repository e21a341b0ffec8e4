"""The Mooncake agent: one process that drives the real Mooncake Store and Transfer Engine through
their public Python API (``mooncake.store.MooncakeDistributedStore``, ``mooncake.engine.
TransferEngine``) for a service that is not written in Python (the Java data plane's ``mooncake``
engine), and the client that talks to it.

Run it as ``python -m weight_relay.mooncake_agent --socket PATH --master HOST:PORT --hostname
HOST``. It

* refuses to start unless the importable ``mooncake`` package belongs to the pinned wheel
  (:data:`PINNED_VERSION`; :class:`MooncakeVersionError`): the agent depends on that wheel's API;
* pins every address Mooncake uses: ``MC_TCP_BIND_ADDRESS`` and the ``local_hostname`` given to
  ``setup``/``initialize`` are ``--hostname``, the master is ``--master``; each must be an IP
  literal inside the allowed networks (loopback and 198.18.0.0/15 unless ``--allow-network``
  widens them; :class:`MooncakeAddressError`). Metadata goes peer to peer (``P2PHANDSHAKE``)
  unless ``--metadata`` names a server;
* mounts a store segment of ``--segment-size`` bytes (0: a client that only reads) and starts a
  Transfer Engine for one-sided writes;
* exits when the process that started it ends, so it never outlives its service;
* listens on the unix socket ``--socket`` and then prints one line ``{"ready": {...}}`` to
  stdout (the readiness handshake: pid, version, its store segment and the endpoint the master
  reports for replicas in it, its Transfer Engine segment);
  a start that fails prints ``{"error": {"type": ..., "message": ...}}`` instead and exits 2.

Commands are frames on the socket: a 4-byte big-endian length, then UTF-8 JSON ``{"id": n, "op":
..., ...}``; the answer is ``{"id": n, "ok": true, ...}`` or ``{"id": n, "ok": false, "error":
{"type", "message", "code"?}}``. Each command carries a batch (many keys or ranges) and only
offsets: the payload never crosses the socket. The caller and the agent map the same shared-memory
file (``map``), which the agent registers with both the store client and the Transfer Engine.
Connections are served concurrently (Mooncake releases the GIL while it moves bytes).
"""

from __future__ import annotations

import argparse
import ctypes
import importlib.metadata
import importlib.util
import ipaddress
import json
import mmap
import os
import socket
import struct
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import RelayError

PINNED_VERSION = "0.3.13.post1"
"""The Mooncake wheel version the agent is written against (``python/requirements.txt``)."""

PINNED_DISTRIBUTIONS = ("mooncake-transfer-engine-non-cuda", "mooncake-transfer-engine")
"""The wheels of that version the agent accepts: the CPU build and the CUDA build (same API)."""

DEFAULT_NETWORKS = ("127.0.0.0/8", "198.18.0.0/15")
"""Where Mooncake addresses may be unless ``--allow-network`` widens it: loopback and the
benchmark range the lab's network namespaces use."""

_MAX_FRAME = 64 << 20

MOONCAKE_ERRORS = {
    -1: "INTERNAL_ERROR", -10: "BUFFER_OVERFLOW", -101: "SEGMENT_NOT_FOUND",
    -102: "SEGMENT_ALREADY_EXISTS", -200: "NO_AVAILABLE_HANDLE", -300: "INVALID_VERSION",
    -400: "INVALID_KEY", -500: "WRITE_FAIL", -600: "INVALID_PARAMS", -601: "ILLEGAL_CLIENT",
    -700: "INVALID_WRITE", -701: "INVALID_READ", -702: "INVALID_REPLICA",
    -703: "REPLICA_IS_NOT_READY", -704: "OBJECT_NOT_FOUND", -705: "OBJECT_ALREADY_EXISTS",
    -706: "OBJECT_HAS_LEASE", -707: "LEASE_EXPIRED", -708: "OBJECT_HAS_REPLICATION_TASK",
    -800: "TRANSFER_FAIL", -900: "RPC_FAIL",
}
"""Mooncake's ``ErrorCode`` names (mooncake-store ``types.h``) for the codes its calls return."""


_TRANSFER_FAIL = -800
_TRANSFER_ATTEMPTS = 4
"""How often a put that fails with TRANSFER_FAIL is tried (the start-up probe and ``put``): the
pinned wheel's tcp transport fails a transfer into a just-mounted segment now and then, and the
next try succeeds (seen in CI for the probe and for a first put)."""


def _backoff(attempt: int) -> None:
    time.sleep(0.2 * 2**attempt)


def code_name(code: int) -> str:
    """The name of a Mooncake error code (``OBJECT_HAS_LEASE``), or ``MOONCAKE_<code>``."""
    return MOONCAKE_ERRORS.get(code, f"MOONCAKE_{code}")


class MooncakeAgentError(RelayError):
    """Base of the agent's errors; ``kind`` is the type name the agent's protocol carries."""

    kind = "MooncakeAgentError"


class MooncakeVersionError(MooncakeAgentError):
    """The importable ``mooncake`` package is missing or is not the pinned wheel."""

    kind = "MooncakeVersionError"


class MooncakeAddressError(MooncakeAgentError, ValueError):
    """An address given to Mooncake is not an IP literal of the allowed networks."""

    kind = "MooncakeAddressError"


class MooncakeSetupError(MooncakeAgentError):
    """The store client or the Transfer Engine did not start (master unreachable, say)."""

    kind = "MooncakeSetupError"


class MooncakeOperationError(MooncakeAgentError):
    """A Mooncake call of a command failed: ``op`` the command, ``code`` Mooncake's error code
    (``code_name`` its name), ``key`` the object or target it concerned when there is one."""

    kind = "MooncakeOperationError"

    def __init__(self, message: str, op: str, code: int, key: str | None = None) -> None:
        super().__init__(message)
        self.op = op
        self.code = code
        self.code_name = code_name(code)
        self.key = key


class AgentProtocolError(MooncakeAgentError):
    """A command the agent does not understand, or an answer the client did not expect."""

    kind = "AgentProtocolError"


class AgentGoneError(MooncakeAgentError):
    """The agent process died or closed its socket while a command was in flight (or before it
    was ready): nothing of that command may be assumed done."""

    kind = "AgentGoneError"


_KINDS: dict[str, type[MooncakeAgentError]] = {
    c.kind: c for c in (MooncakeAgentError, MooncakeVersionError, MooncakeAddressError,
                        MooncakeSetupError, AgentProtocolError, AgentGoneError)}


def check_pinned_wheel() -> str:
    """The version of the Mooncake wheel ``import mooncake`` would load, when it is the pinned one
    (:data:`PINNED_VERSION` of one of :data:`PINNED_DISTRIBUTIONS`, and the package's files are
    that distribution's); :class:`MooncakeVersionError` otherwise. Imports nothing of Mooncake."""
    spec = importlib.util.find_spec("mooncake")
    if spec is None or not spec.submodule_search_locations:
        raise MooncakeVersionError(
            f"no mooncake package is installed: install "
            f"{PINNED_DISTRIBUTIONS[0]}=={PINNED_VERSION}")
    package_dir = Path(next(iter(spec.submodule_search_locations))).resolve()
    names = sorted(set(importlib.metadata.packages_distributions().get("mooncake", [])))
    for name in names:
        dist = importlib.metadata.distribution(name)
        if Path(str(dist.locate_file("mooncake"))).resolve() != package_dir:
            continue  # another distribution's mooncake, shadowed by the importable one
        version = dist.version
        dist_name = dist.metadata["Name"]
        if dist_name not in PINNED_DISTRIBUTIONS or version != PINNED_VERSION:
            raise MooncakeVersionError(
                f"the mooncake package at {package_dir} is {dist_name} {version}; this agent "
                f"runs only {' or '.join(PINNED_DISTRIBUTIONS)} {PINNED_VERSION} (the pinned "
                "wheel): install that version")
        return version
    raise MooncakeVersionError(
        f"the mooncake package at {package_dir} belongs to no installed distribution "
        f"({', '.join(names) or 'none'} claim the name): install "
        f"{PINNED_DISTRIBUTIONS[0]}=={PINNED_VERSION}")


def check_address(what: str, host: str, networks: Sequence[str] = DEFAULT_NETWORKS) -> str:
    """``host`` when it is an IP literal inside ``networks``; :class:`MooncakeAddressError`
    naming ``what`` otherwise (a name could resolve anywhere; 0.0.0.0 is every interface)."""
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        raise MooncakeAddressError(
            f"{what} '{host}' is not an IP address: Mooncake addresses are pinned to literals"
        ) from None
    if not any(address in ipaddress.ip_network(n) for n in networks):
        raise MooncakeAddressError(
            f"{what} {host} is outside the allowed networks {', '.join(networks)} "
            "(--allow-network adds one)")
    return host


def _split_host_port(what: str, endpoint: str) -> tuple[str, int]:
    host, sep, port = endpoint.rpartition(":")
    if not sep or not port.isdigit():
        raise MooncakeAddressError(f"{what} '{endpoint}' is not HOST:PORT")
    return host, int(port)


# ---------------------------------------------------------------------------------------------
# framing (both sides)

def send_frame(sock: socket.socket, body: dict[str, Any]) -> None:
    data = json.dumps(body, separators=(",", ":")).encode()
    sock.sendall(struct.pack(">I", len(data)) + data)


def _recv_exact(sock: socket.socket, n: int) -> bytes | None:
    chunks = []
    while n:
        chunk = sock.recv(n)
        if not chunk:
            return None
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def recv_frame(sock: socket.socket) -> dict[str, Any] | None:
    """The next frame, or None when the peer closed the socket between frames."""
    head = _recv_exact(sock, 4)
    if head is None:
        return None
    (length,) = struct.unpack(">I", head)
    if length > _MAX_FRAME:
        raise AgentProtocolError(f"frame of {length} bytes exceeds {_MAX_FRAME}")
    data = _recv_exact(sock, length)
    if data is None:
        return None
    try:
        body = json.loads(data)
    except ValueError as e:  # JSONDecodeError and UnicodeDecodeError
        raise AgentProtocolError(f"a frame that is not JSON: {e}") from e
    if not isinstance(body, dict):
        raise AgentProtocolError("a frame must be a JSON object")
    return body


# ---------------------------------------------------------------------------------------------
# the agent

@dataclass
class _Mapped:
    path: str
    size: int
    mapping: mmap.mmap
    address: int


class Agent:
    """The agent's state: one store client, one Transfer Engine, the shared-memory files mapped
    for its callers. Built by :func:`main` after the version and address checks."""

    def __init__(self, args: argparse.Namespace) -> None:
        from mooncake.engine import TransferEngine
        from mooncake.store import MooncakeDistributedStore, ReplicateConfig

        self._replicate_config = ReplicateConfig
        self.hostname = args.hostname
        self.store = MooncakeDistributedStore()
        rc = self.store.setup(args.hostname, args.metadata, args.segment_size,
                              args.local_buffer_size, args.protocol, args.rdma_devices,
                              args.master)
        if rc != 0:
            raise MooncakeSetupError(
                f"store client setup against master {args.master} failed with {rc} "
                f"({code_name(rc)})")
        self.store_segment = str(self.store.get_hostname())
        self.store_endpoint = self._own_endpoint() if args.segment_size > 0 else ""
        self.engine = TransferEngine()
        rc = self.engine.initialize(args.hostname, args.metadata, args.protocol,
                                    args.rdma_devices)
        if rc != 0:
            raise MooncakeSetupError(f"Transfer Engine initialize failed with {rc}")
        self.engine_segment = f"{args.hostname}:{self.engine.get_rpc_port()}"
        self._lock = threading.Lock()
        self._mapped: dict[int, _Mapped] = {}
        self._next_buffer = 1

    def _own_endpoint(self) -> str:
        """The transport endpoint the master reports for replicas in this agent's own segment
        (what ``replicas`` answers for them), learnt by storing one probe byte there."""
        import uuid

        probe = mmap.mmap(-1, mmap.PAGESIZE)
        address = ctypes.addressof(ctypes.c_char.from_buffer(probe))
        if self.store.register_buffer(address, len(probe)) != 0:
            raise MooncakeSetupError("cannot register the probe buffer with the store")
        try:
            config = self._replicate_config()
            config.replica_num = 1
            config.preferred_segment = self.store_segment
            # The first transfer into a segment just mounted fails now and then with
            # TRANSFER_FAIL on the pinned wheel's tcp transport (seen in CI, for this probe and for
            # a test's first put); it is tried again a few times before the agent refuses to start.
            for attempt in range(_TRANSFER_ATTEMPTS):
                key = f"__weight_relay_probe/{uuid.uuid4().hex}"  # a failed put's key is not reused
                rc = self.store.put_from(key, address, 1, config)
                if rc != _TRANSFER_FAIL or attempt == _TRANSFER_ATTEMPTS - 1:
                    break
                _backoff(attempt)
            if rc != 0:
                raise MooncakeSetupError(
                    f"storing a probe byte in the agent's own segment failed with {rc} "
                    f"({code_name(rc)})")
            replicas = self.store.get_replica_desc(key)
            self.store.remove(key, True)
        finally:
            self.store.unregister_buffer(address)
        if len(replicas) != 1 or not replicas[0].is_memory_replica():
            raise MooncakeSetupError(f"the probe byte has {len(replicas)} replicas, not one")
        return str(replicas[0].get_memory_descriptor().buffer_descriptor.transport_endpoint)

    # -- commands ---------------------------------------------------------------------------
    def op_ping(self, _: dict[str, Any]) -> dict[str, Any]:
        return {}

    def op_map(self, cmd: dict[str, Any]) -> dict[str, Any]:
        path, size = str(cmd["path"]), int(cmd["size"])
        fd = os.open(path, os.O_RDWR)
        try:
            if os.fstat(fd).st_size < size:
                raise AgentProtocolError(f"{path} is smaller than {size} bytes")
            mapping = mmap.mmap(fd, size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        finally:
            os.close(fd)
        address = ctypes.addressof(ctypes.c_char.from_buffer(mapping))
        rc = self.store.register_buffer(address, size)
        if rc != 0:
            mapping.close()
            raise MooncakeOperationError(f"registering {path} with the store failed", "map", rc)
        rc = self.engine.register_memory(address, size)
        if rc != 0:
            self.store.unregister_buffer(address)
            raise MooncakeOperationError(
                f"registering {path} with the Transfer Engine failed", "map", rc)
        with self._lock:
            buffer = self._next_buffer
            self._next_buffer += 1
            self._mapped[buffer] = _Mapped(path, size, mapping, address)
        return {"buffer": buffer, "address": address}

    def op_unmap(self, cmd: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            m = self._mapped.pop(int(cmd["buffer"]), None)
        if m is None:
            raise AgentProtocolError(f"no mapped buffer {cmd['buffer']}")
        self.engine.unregister_memory(m.address)
        self.store.unregister_buffer(m.address)
        m.mapping.close()
        return {}

    def _range(self, cmd: dict[str, Any], offsets: Sequence[int], sizes: Sequence[int]) -> int:
        with self._lock:
            m = self._mapped.get(int(cmd["buffer"]))
        if m is None:
            raise AgentProtocolError(f"no mapped buffer {cmd['buffer']}")
        for offset, size in zip(offsets, sizes, strict=True):
            if offset < 0 or size <= 0 or offset + size > m.size:
                raise AgentProtocolError(
                    f"range [{offset}, {offset + size}) is outside {m.path} ({m.size} bytes)")
        return m.address

    def op_put(self, cmd: dict[str, Any]) -> dict[str, Any]:
        keys = [str(k) for k in cmd["keys"]]
        offsets = [int(o) for o in cmd["offsets"]]
        sizes = [int(s) for s in cmd["sizes"]]
        base = self._range(cmd, offsets, sizes)
        config = self._replicate_config()
        config.replica_num = int(cmd.get("replica_num", 1))
        config.with_hard_pin = bool(cmd.get("hard_pin", True))
        config.preferred_segment = str(cmd.get("preferred_segment") or self.store_segment)
        codes = [int(c) for c in self.store.batch_put_from(
            keys, [base + o for o in offsets], sizes, config)]
        # A key whose transfer failed was revoked by the store client, so the same key is put
        # again; any other code is the answer.
        for attempt in range(_TRANSFER_ATTEMPTS - 1):
            again = [i for i, c in enumerate(codes) if c == _TRANSFER_FAIL]
            if not again:
                break
            print(f"put: {len(again)} of {len(keys)} keys failed with TRANSFER_FAIL "
                  f"(first '{keys[again[0]]}'); trying them again", file=sys.stderr, flush=True)
            _backoff(attempt)
            retried = self.store.batch_put_from([keys[i] for i in again],
                                                [base + offsets[i] for i in again],
                                                [sizes[i] for i in again], config)
            for i, c in zip(again, retried, strict=True):
                codes[i] = int(c)
        return {"codes": codes}

    def op_get_ranges(self, cmd: dict[str, Any]) -> dict[str, Any]:
        reads = cmd["reads"]
        keys = [str(r["key"]) for r in reads]
        dst = [[int(x) for x in r["dst"]] for r in reads]
        src = [[int(x) for x in r["src"]] for r in reads]
        lengths = [[int(x) for x in r["len"]] for r in reads]
        base = self._range(cmd, [o for d in dst for o in d], [n for ln in lengths for n in ln])
        # per buffer (one), per key, per range
        out = self.store.get_into_ranges([base], [keys], [dst], [src], [lengths])
        return {"bytes": [[int(n) for n in per_key] for per_key in out[0]]}

    def op_replicas(self, cmd: dict[str, Any]) -> dict[str, Any]:
        keys = [str(k) for k in cmd["keys"]]
        found = self.store.batch_get_replica_desc(keys)
        out: list[list[str]] = []
        for key in keys:
            endpoints = []
            for replica in found.get(key, []):
                if replica.is_memory_replica():
                    d = replica.get_memory_descriptor().buffer_descriptor
                    endpoints.append(str(d.transport_endpoint))
            out.append(endpoints)
        return {"replicas": out}

    def op_exists(self, cmd: dict[str, Any]) -> dict[str, Any]:
        return {"exists": [int(x) for x in self.store.batch_is_exist([str(k)
                                                                      for k in cmd["keys"]])]}

    def op_sizes(self, cmd: dict[str, Any]) -> dict[str, Any]:
        return {"sizes": [int(self.store.get_size(str(k))) for k in cmd["keys"]]}

    def op_remove(self, cmd: dict[str, Any]) -> dict[str, Any]:
        codes = self.store.batch_remove([str(k) for k in cmd["keys"]],
                                        bool(cmd.get("force", False)))
        return {"codes": [int(c) for c in codes]}

    def op_write(self, cmd: dict[str, Any]) -> dict[str, Any]:
        local = [int(x) for x in cmd["local"]]
        lengths = [int(x) for x in cmd["len"]]
        base = self._range(cmd, local, lengths)
        target = str(cmd["target"])
        notify = cmd.get("notify")
        if notify is None:
            rc = self.engine.batch_transfer_sync_write(
                target, [base + o for o in local], [int(x) for x in cmd["remote"]], lengths)
        else:
            from mooncake.engine import TransferNotify, TransferOpcode

            rc = self.engine.batch_transfer_sync(
                target, [base + o for o in local], [int(x) for x in cmd["remote"]], lengths,
                TransferOpcode.Write, TransferNotify(str(notify["name"]), str(notify["msg"])))
        if rc != 0:
            raise MooncakeOperationError(
                f"Transfer Engine write of {len(local)} ranges to {target} failed", "write", rc,
                target)
        return {}

    def op_notifies(self, _: dict[str, Any]) -> dict[str, Any]:
        """The notifies other engines' writes delivered to this Transfer Engine since the last
        call (Mooncake hands each out once)."""
        return {"notifies": [{"name": str(n.name), "msg": str(n.msg)}
                             for n in self.engine.get_notifies()]}

    def op_read(self, cmd: dict[str, Any]) -> dict[str, Any]:
        local = [int(x) for x in cmd["local"]]
        lengths = [int(x) for x in cmd["len"]]
        base = self._range(cmd, local, lengths)
        target = str(cmd["target"])
        rc = self.engine.batch_transfer_sync_read(
            target, [base + o for o in local], [int(x) for x in cmd["remote"]], lengths)
        if rc != 0:
            raise MooncakeOperationError(
                f"Transfer Engine read of {len(local)} ranges from {target} failed", "read", rc,
                target)
        return {}

    def handle(self, cmd: dict[str, Any]) -> dict[str, Any]:
        op = cmd.get("op")
        method = getattr(self, f"op_{op}", None) if isinstance(op, str) else None
        if method is None:
            raise AgentProtocolError(f"unknown command {op!r}")
        result: dict[str, Any] = method(cmd)
        return result


def _serve_connection(agent: Agent, conn: socket.socket) -> None:
    with conn:
        while True:
            try:
                cmd = recv_frame(conn)
            except (OSError, ValueError, MooncakeAgentError):
                return
            if cmd is None:
                return
            if cmd.get("op") == "shutdown":
                agent.store.close()
                send_frame(conn, {"id": cmd.get("id"), "ok": True})
                os._exit(0)
            try:
                answer = {"id": cmd.get("id"), "ok": True, **agent.handle(cmd)}
            except MooncakeOperationError as e:
                answer = {"id": cmd.get("id"), "ok": False, "error": {
                    "type": e.kind, "message": str(e), "op": e.op, "code": e.code,
                    "code_name": e.code_name, "key": e.key}}
            except MooncakeAgentError as e:
                answer = {"id": cmd.get("id"), "ok": False,
                          "error": {"type": e.kind, "message": str(e)}}
            except (KeyError, TypeError, ValueError) as e:
                answer = {"id": cmd.get("id"), "ok": False, "error": {
                    "type": AgentProtocolError.kind,
                    "message": f"malformed {cmd.get('op')!r} command: {e!r}"}}
            except OSError as e:
                answer = {"id": cmd.get("id"), "ok": False,
                          "error": {"type": MooncakeAgentError.kind, "message": str(e)}}
            try:
                send_frame(conn, answer)
            except OSError:
                return


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m weight_relay.mooncake_agent",
                                description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("--socket", required=True, help="unix socket path to listen on")
    p.add_argument("--master", required=True, help="the master's HOST:PORT (rpc port)")
    p.add_argument("--hostname", required=True,
                   help="this agent's address for Mooncake (MC_TCP_BIND_ADDRESS, local_hostname)")
    p.add_argument("--metadata", default="P2PHANDSHAKE",
                   help="metadata server URL, or P2PHANDSHAKE (default: no metadata server)")
    p.add_argument("--segment-size", type=int, default=0,
                   help="bytes of store segment this agent mounts (0: a reading client)")
    p.add_argument("--local-buffer-size", type=int, default=16 << 20)
    p.add_argument("--protocol", default="tcp", help="tcp or rdma")
    p.add_argument("--rdma-devices", default="", help="RDMA device names, comma separated")
    p.add_argument("--allow-network", action="append", default=[],
                   help="a CIDR Mooncake addresses may also be in (repeatable)")
    return p


def _die_with_parent() -> None:
    """Exits this agent within half a second of the process that started it ending (however it
    ends), so an agent never outlives its service. Watches the parent process, not the thread that
    started the agent (``PR_SET_PDEATHSIG`` would fire when that thread ends: in a JVM, any pool
    thread)."""
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(3)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    _die_with_parent()
    try:
        version = check_pinned_wheel()
        networks = (*DEFAULT_NETWORKS, *args.allow_network)
        check_address("--hostname", args.hostname, networks)
        master_host, _ = _split_host_port("--master", args.master)
        check_address("--master", master_host, networks)
        if args.metadata != "P2PHANDSHAKE":
            from urllib.parse import urlparse
            check_address("--metadata", urlparse(args.metadata).hostname or "", networks)
        os.environ["MC_TCP_BIND_ADDRESS"] = args.hostname
        agent = Agent(args)
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        if os.path.exists(args.socket):
            os.unlink(args.socket)
        server.bind(args.socket)
        server.listen(16)
    except MooncakeAgentError as e:
        print(json.dumps({"error": {"type": e.kind, "message": str(e)}}), flush=True)
        return 2
    except (ImportError, OSError) as e:
        print(json.dumps({"error": {"type": MooncakeSetupError.kind, "message": repr(e)}}),
              flush=True)
        return 2
    print(json.dumps({"ready": {"pid": os.getpid(), "version": version,
                                "store_segment": agent.store_segment,
                                "store_endpoint": agent.store_endpoint,
                                "engine_segment": agent.engine_segment,
                                "socket": args.socket}}), flush=True)
    while True:
        conn, _ = server.accept()
        threading.Thread(target=_serve_connection, args=(agent, conn), daemon=True).start()


def error_from(body: dict[str, Any]) -> MooncakeAgentError:
    """The typed error an agent's error answer (or failed start line) describes."""
    kind = str(body.get("type", MooncakeAgentError.kind))
    message = str(body.get("message", "the agent failed"))
    if kind == MooncakeOperationError.kind:
        return MooncakeOperationError(message, str(body.get("op")), int(body.get("code", -1)),
                                      body.get("key"))
    return _KINDS.get(kind, MooncakeAgentError)(message)


if __name__ == "__main__":
    sys.exit(main())
