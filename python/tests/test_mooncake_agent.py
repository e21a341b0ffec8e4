"""The Mooncake agent against the real Mooncake: a ``mooncake_master`` from the pinned wheel started
here on free loopback ports, agents as child processes with real store clients and Transfer
Engines, and a plain Python process that uses only ``mooncake.engine.TransferEngine``."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from weight_relay.mooncake_agent import (
    PINNED_VERSION,
    AgentGoneError,
    AgentProtocolError,
    MooncakeAddressError,
    MooncakeOperationError,
    MooncakeVersionError,
    check_pinned_wheel,
)
from weight_relay.mooncake_client import AgentClient, SharedFile

MIB = 1 << 20
SRC = Path(__file__).resolve().parents[1] / "src"


def _listening(pid: int) -> list[str]:
    """The local addresses of the TCP sockets process ``pid`` listens on."""
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            link = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if link.startswith("socket:["):
            inodes.add(link[8:-1])
    out = []
    for table, width in (("tcp", 8), ("tcp6", 32)):
        with open(f"/proc/{pid}/net/{table}") as f:
            next(f)
            for line in f:
                cols = line.split()
                if cols[3] == "0A" and cols[9] in inodes:  # LISTEN
                    hexaddr, hexport = cols[1].split(":")
                    raw = bytes.fromhex(hexaddr)
                    if width == 8:
                        host = socket.inet_ntop(socket.AF_INET, raw[::-1])
                    else:
                        words = b"".join(raw[i:i + 4][::-1] for i in range(0, 16, 4))
                        host = socket.inet_ntop(socket.AF_INET6, words)
                    out.append(f"{host}:{int(hexport, 16)}")
    return out


@pytest.fixture(scope="module")
def netns() -> Iterator[list[str]]:
    """A network namespace of this module with only its loopback up: Mooncake 0.3.13.post1's
    Transfer Engine listens on every interface whatever address it is given (see
    test_every_mooncake_listener_is_confined_to_the_namespace_loopback), so its processes run here.
    Answers the command prefix that runs a program inside."""
    name = f"wr-mc-{uuid.uuid4().hex[:8]}"
    subprocess.run(["ip", "netns", "add", name], check=True)
    try:
        subprocess.run(["ip", "netns", "exec", name, "ip", "link", "set", "lo", "up"],
                       check=True)
        yield ["ip", "netns", "exec", name]
    finally:
        subprocess.run(["ip", "netns", "del", name], check=False)


@pytest.fixture(scope="module")
def master(tmp_path_factory: pytest.TempPathFactory,
           netns: list[str]) -> Iterator[tuple[str, int]]:
    """A real mooncake_master in the namespace, its rpc and metrics ports on 127.0.0.1; answers
    (HOST:PORT, pid)."""
    binary = Path(sys.executable).parent / "mooncake_master"
    rpc, metrics = 50051, 50052  # the namespace is new: nothing else listens in it
    log = open(tmp_path_factory.mktemp("master") / "master.log", "wb")
    process = subprocess.Popen(
        [*netns, str(binary), f"--rpc_port={rpc}", "--rpc_address=127.0.0.1",
         "--metrics_host=127.0.0.1", f"--metrics_port={metrics}",
         "--default_kv_lease_ttl=500"], stdout=log, stderr=subprocess.STDOUT)
    probe = (f"import socket,time\nfor _ in range(300):\n try:\n  socket.create_connection("
             f"('127.0.0.1',{rpc}),1).close(); break\n except OSError: time.sleep(0.1)\n"
             "else: raise SystemExit(1)")
    if subprocess.run([*netns, sys.executable, "-c", probe]).returncode != 0:
        process.kill()
        pytest.fail(f"mooncake_master did not listen on 127.0.0.1:{rpc}")
    yield f"127.0.0.1:{rpc}", process.pid
    process.kill()
    process.wait()
    log.close()


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(SRC), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env.pop("MC_TCP_BIND_ADDRESS", None)  # the agent must pin it itself
    return env


@pytest.fixture
def agents(tmp_path: Path, master: tuple[str, int],
           netns: list[str]) -> Iterator[Callable[[int], AgentClient]]:
    started: list[AgentClient] = []

    def start(segment_size: int) -> AgentClient:
        sock = str(tmp_path / f"agent-{len(started)}.sock")
        log = open(tmp_path / f"agent-{len(started)}.log", "wb")
        client = AgentClient.start(sock, master[0], segment_size=segment_size, env=_env(),
                                   log=log, prefix=netns)
        started.append(client)
        return client

    yield start
    for client in started:
        client.close()
    # Mooncake's own error lines, which pytest shows beside a failed test (CI keeps no files)
    for i in range(len(started)):
        for line in (tmp_path / f"agent-{i}.log").read_text(errors="replace").splitlines():
            if line.startswith(("E", "W", "put:")):
                print(f"agent-{i}: {line}", file=sys.stderr)


@pytest.fixture
def shm() -> Iterator[Callable[[int], SharedFile]]:
    files: list[SharedFile] = []

    def make(size: int) -> SharedFile:
        f = SharedFile(f"/dev/shm/wr-test-mooncake-{uuid.uuid4().hex}", size)
        files.append(f)
        return f

    yield make
    for f in files:
        f.close()


def test_the_installed_wheel_is_the_pinned_one() -> None:
    assert check_pinned_wheel() == PINNED_VERSION


def test_a_batch_put_by_one_agent_reads_back_byte_exact_through_another(agents, shm) -> None:
    start = agents
    publisher, reader = start(64 * MIB), start(0)
    assert publisher.ready.version == PINNED_VERSION
    src, dst = shm(8 * MIB), shm(8 * MIB)
    payload = os.urandom(8 * MIB)
    src.view[:] = payload
    buf_src, _ = publisher.map(src)
    buf_dst, _ = reader.map(dst)
    run = uuid.uuid4().hex
    keys = [f"{run}/t{i}" for i in range(4)]
    offsets, sizes = [0, 1 * MIB, 3 * MIB, 6 * MIB], [1 * MIB, 2 * MIB, 3 * MIB, 2 * MIB]
    publisher.put(buf_src, keys, offsets, sizes)
    # one command reads ranges of every object, at their edges, and a missing object fails alone
    reads = [(keys[0], [(0, 0, 4096), (4096, MIB - 4096, 4096)]),
             (keys[2], [(8192, 0, 3 * MIB)]),
             (f"{run}/missing", [(4 * MIB, 0, 16)]),
             (keys[3], [(5 * MIB, 2 * MIB - 1, 1), (5 * MIB + 1, 0, 2 * MIB - 1)])]
    got = reader.get_into_ranges(buf_dst, reads)
    assert got[0] == [4096, 4096] and got[1] == [3 * MIB] and got[3] == [1, 2 * MIB - 1]
    assert got[2] == [-704]  # OBJECT_NOT_FOUND, for that object only
    view = dst.view
    assert view[0:4096] == payload[0:4096]
    assert view[4096:8192] == payload[MIB - 4096:MIB]
    assert view[8192:8192 + 3 * MIB] == payload[3 * MIB:6 * MIB]
    assert view[5 * MIB:5 * MIB + 1] == payload[8 * MIB - 1:8 * MIB]
    assert view[5 * MIB + 1:7 * MIB] == payload[6 * MIB:8 * MIB - 1]
    assert reader.exists([keys[1], f"{run}/missing"]) == [True, False]
    assert reader.sizes([keys[2], f"{run}/missing", keys[0]]) == [3 * MIB, -704, MIB]


def test_a_put_lands_in_the_preferred_segment(agents, shm) -> None:
    start = agents
    a, b = start(32 * MIB), start(32 * MIB)
    src = shm(MIB)
    src.view[:] = os.urandom(MIB)
    buf, _ = a.map(src)
    run = uuid.uuid4().hex
    a.put(buf, [f"{run}/own"], [0], [MIB])
    a.put(buf, [f"{run}/other"], [0], [MIB], preferred_segment=b.ready.store_segment)
    b_buf, _ = b.map(shm(MIB))
    b.put(b_buf, [f"{run}/b-own"], [0], [MIB])
    own, other, b_own = a.replicas([f"{run}/own", f"{run}/other", f"{run}/b-own"])
    assert a.ready.store_endpoint != b.ready.store_endpoint
    assert own == [a.ready.store_endpoint]
    assert other == b_own == [b.ready.store_endpoint]
    assert a.local_replica_ratio([f"{run}/own", f"{run}/other"]) == 0.5
    assert b.local_replica_ratio([f"{run}/other", f"{run}/b-own"]) == 1.0


def test_remove_answers_the_read_lease_and_force_removes(agents, shm) -> None:
    start = agents
    a = start(16 * MIB)
    f = shm(MIB)
    buf, _ = a.map(f)
    key = f"{uuid.uuid4().hex}/leased"
    a.put(buf, [key], [0], [4096])
    assert a.get_into_ranges(buf, [(key, [(8192, 0, 4096)])]) == [[4096]]
    assert a.remove([key]) == [-706]  # OBJECT_HAS_LEASE right after a read
    assert a.remove([key], force=True) == [0]
    assert a.exists([key]) == [False]


def test_a_te_write_lands_in_a_buffer_a_plain_mooncake_process_registered(agents, shm,
                                                                        netns) -> None:
    """The interoperability clause: the worker runs mooncake.engine.TransferEngine and the
    package's register_receive_buffer only; the agent writes into it one-sided."""
    start = agents
    loader = start(0)
    worker_code = textwrap.dedent("""
        import hashlib, json, mmap, os, sys
        os.environ["MC_TCP_BIND_ADDRESS"] = "127.0.0.1"
        from mooncake.engine import TransferEngine
        from weight_relay.mooncake_client import buffer_address, register_receive_buffer
        engine = TransferEngine()
        assert engine.initialize("127.0.0.1", "P2PHANDSHAKE", "tcp", "") == 0
        memory = mmap.mmap(-1, 4 << 20)
        rb = register_receive_buffer(engine, "127.0.0.1", buffer_address(memory), len(memory))
        print(json.dumps(rb.registration("params", "w0-te")), flush=True)
        for line in sys.stdin:
            print(hashlib.sha256(memory[:]).hexdigest(), flush=True)
    """)
    worker = subprocess.Popen([*netns, sys.executable, "-c", worker_code], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=_env(),
                              text=True)
    try:
        assert worker.stdout is not None and worker.stdin is not None
        declared = json.loads(worker.stdout.readline())
        assert declared["bufferId"] == "params" and declared["segment"] == "w0-te"
        assert declared["size"] == 4 * MIB
        target = declared["transferEngine"]
        assert str(target["segment"]).startswith("127.0.0.1:")
        src = shm(4 * MIB)
        payload = os.urandom(4 * MIB)
        src.view[:] = payload
        buf, _ = loader.map(src)
        base = int(target["address"])
        ranges = [(0, base + 3 * MIB, MIB), (MIB, base, 2 * MIB), (3 * MIB, base + 2 * MIB, 17)]
        loader.write(buf, str(target["segment"]), ranges)
        expected = bytearray(4 * MIB)
        for local, remote, length in ranges:
            expected[remote - base:remote - base + length] = payload[local:local + length]
        worker.stdin.write("sum\n")
        worker.stdin.flush()
        assert worker.stdout.readline().strip() == hashlib.sha256(expected).hexdigest()
    finally:
        worker.kill()
        worker.wait()


def test_a_te_read_of_another_agents_buffer_lands_byte_exact(agents, shm) -> None:
    owner, reader = agents(0), agents(0)
    src, dst = shm(2 * MIB), shm(2 * MIB)
    payload = os.urandom(2 * MIB)
    src.view[:] = payload
    _, address = owner.map(src)
    buf, _ = reader.map(dst)
    reader.read(buf, owner.ready.engine_segment,
                [(0, address + MIB, 4096), (8192, address + 17, MIB)])
    assert dst.view[0:4096] == payload[MIB:MIB + 4096]
    assert dst.view[8192:8192 + MIB] == payload[17:17 + MIB]
    assert dst.view[4096:8192] == bytes(4096)
    target = "127.0.0.1:50098"  # nothing listens there in the namespace
    with pytest.raises(MooncakeOperationError) as e:
        reader.read(buf, target, [(0, 4096, 4096)])
    assert e.value.op == "read" and e.value.key == target


def test_a_write_with_notify_delivers_it_to_the_target_once_after_the_bytes(agents,
                                                                           shm) -> None:
    writer, target = agents(0), agents(0)
    src, dst = shm(MIB), shm(MIB)
    src.view[:] = os.urandom(MIB)
    buf, _ = writer.map(src)
    _, address = target.map(dst)
    assert target.notifies() == []
    writer.write(buf, target.ready.engine_segment, [(0, address, MIB)], notify=("gen-7", "m1"))
    assert dst.view[:] == src.view[:]
    got: list[tuple[str, str]] = []
    for _ in range(100):
        got += target.notifies()
        if got:
            break
        time.sleep(0.05)
    assert got == [("gen-7", "m1")]
    assert target.notifies() == []  # handed out once
    assert writer.notifies() == []


def test_a_write_to_an_unknown_target_fails_with_the_target_named(agents, shm) -> None:
    start = agents
    loader = start(0)
    buf, _ = loader.map(shm(MIB))
    target = "127.0.0.1:50099"  # nothing listens there in the namespace
    with pytest.raises(MooncakeOperationError) as e:
        loader.write(buf, target, [(0, 4096, 4096)])
    assert e.value.op == "write" and e.value.key == target and target in str(e.value)


def test_every_mooncake_listener_is_confined_to_the_namespace_loopback(agents, master,
                                                                       netns) -> None:
    """What Mooncake is told is loopback only (the agent's segments, the master's ports); what the
    wheel does with it: its Transfer Engine listens on the wildcard address anyway, which only the
    namespace's loopback can reach, so every test, lab and bench runs Mooncake in a namespace."""
    start = agents
    a = start(16 * MIB)
    assert a.ready.store_segment.startswith("127.0.0.1:")
    assert a.ready.engine_segment.startswith("127.0.0.1:")
    master_listening = _listening(master[1])
    assert master_listening and all(x.startswith("127.0.0.1:") for x in master_listening)
    agent_listening = _listening(a.ready.pid)
    assert agent_listening
    assert all(x.split(":")[0] in ("127.0.0.1", "0.0.0.0", "") or x.startswith("::")
               for x in agent_listening), agent_listening
    links = subprocess.run([*netns, "ip", "-o", "link"], capture_output=True, text=True,
                           check=True).stdout.splitlines()
    assert [line.split(":")[1].strip() for line in links] == ["lo"]


def test_an_agent_refuses_another_mooncake_version(tmp_path: Path, master, netns) -> None:
    fake = tmp_path / "site"
    (fake / "mooncake").mkdir(parents=True)
    (fake / "mooncake" / "__init__.py").write_text("")
    info = fake / "mooncake_transfer_engine_non_cuda-0.3.12.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: mooncake-transfer-engine-non-cuda\nVersion: 0.3.12\n")
    (info / "top_level.txt").write_text("mooncake\n")
    env = _env()
    env["PYTHONPATH"] = f"{fake}{os.pathsep}{env['PYTHONPATH']}"
    with pytest.raises(MooncakeVersionError) as e:
        AgentClient.start(str(tmp_path / "a.sock"), master[0], env=env, prefix=netns)
    assert "0.3.12" in str(e.value) and PINNED_VERSION in str(e.value)


@pytest.mark.parametrize("flag, value", [("hostname", "10.1.2.3"), ("hostname", "localhost"),
                                         ("master", "192.168.7.7:5000")])
def test_an_agent_refuses_an_address_outside_the_pinned_networks(
        tmp_path: Path, master, netns, flag: str, value: str) -> None:
    kwargs = {"hostname": "127.0.0.1", "master": master[0], flag: value}
    with pytest.raises(MooncakeAddressError) as e:
        AgentClient.start(str(tmp_path / "a.sock"), kwargs["master"],
                          hostname=kwargs["hostname"], env=_env(), prefix=netns)
    assert value.split(":")[0] in str(e.value) and f"--{flag}" in str(e.value)


def test_an_agent_that_dies_fails_the_command_in_flight_naming_it(agents, shm) -> None:
    start = agents
    a = start(16 * MIB)
    buf, _ = a.map(shm(MIB))
    os.kill(a.ready.pid, signal.SIGSTOP)  # the put below is surely in flight when it dies
    with ThreadPoolExecutor(1) as pool:
        in_flight = pool.submit(a.put, buf, [f"{uuid.uuid4().hex}/k"], [0], [4096])
        try:
            time.sleep(0.5)
            assert not in_flight.done()
        finally:
            os.kill(a.ready.pid, signal.SIGKILL)
        with pytest.raises(AgentGoneError) as e:
            in_flight.result(timeout=30)
    message = str(e.value)
    assert f"pid {a.ready.pid}" in message and "'put'" in message and "-9" in message


def test_an_unmapped_buffer_is_refused_by_name(agents, shm) -> None:
    start = agents
    a = start(0)
    buf, _ = a.map(shm(MIB))
    a.unmap(buf)
    with pytest.raises(AgentProtocolError, match=f"no mapped buffer {buf}"):
        a.get_into_ranges(buf, [("any", [(0, 0, 16)])])


def test_a_full_preferred_segment_yields_a_replica_elsewhere(agents, shm) -> None:
    """Prefer, never require, local: what does not fit in the publisher's own segment lands in
    another agent's and reads back whole."""
    start = agents
    small, big = start(16 * MIB), start(64 * MIB)  # setup refuses 4 MiB (INVALID_PARAMS)
    src = shm(20 * MIB)
    payload = os.urandom(20 * MIB)
    src.view[:] = payload
    buf, _ = small.map(src)
    key = f"{uuid.uuid4().hex}/too-big-for-home"
    small.put(buf, [key], [0], [20 * MIB])  # a TRANSFER_FAIL into big's new segment is retried
    assert small.replicas([key]) == [[big.ready.store_endpoint]]
    assert small.local_replica_ratio([key]) == 0.0
    dst = shm(20 * MIB)
    dbuf, _ = big.map(dst)
    assert big.get_into_ranges(dbuf, [(key, [(0, 0, 20 * MIB)])]) == [[20 * MIB]]
    assert dst.view[:] == payload


def test_an_agent_that_stops_answering_is_killed_at_the_command_timeout(
        tmp_path: Path, master, netns) -> None:
    a = AgentClient.start(str(tmp_path / "a.sock"), master[0], env=_env(), prefix=netns,
                          command_timeout=2.0)
    try:
        os.kill(a.ready.pid, signal.SIGSTOP)
        t0 = time.monotonic()
        with pytest.raises(AgentGoneError, match=r"did not answer within 2.0 s and was killed"):
            a.ping()
        assert time.monotonic() - t0 < 20
        assert a.process is not None and a.process.poll() == -signal.SIGKILL
    finally:
        a.close()


def test_an_agent_dies_with_the_process_that_started_it(tmp_path: Path, master, netns) -> None:
    parent_code = textwrap.dedent(f"""
        import sys
        from weight_relay.mooncake_client import AgentClient
        a = AgentClient.start({str(tmp_path / "a.sock")!r}, {master[0]!r},
                              prefix={netns!r})
        print(a.ready.pid, flush=True)
        sys.stdin.read()
    """)
    parent = subprocess.Popen([sys.executable, "-c", parent_code], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, env=_env(), text=True)
    assert parent.stdout is not None
    agent_pid = int(parent.stdout.readline())
    os.kill(agent_pid, 0)  # alive
    parent.kill()
    parent.wait()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            os.kill(agent_pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    os.kill(agent_pid, signal.SIGKILL)
    pytest.fail(f"agent pid {agent_pid} outlived the process that started it")
