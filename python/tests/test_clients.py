"""The clients' own contract, without a lab: answers as dataclasses, context managers that unmap
what they mapped (never under a live view), every error a RelayError, the ``weight_relay``
logger, and adapters that fall back to a stand-in only when the framework is missing."""

from __future__ import annotations

import dataclasses
import gc
import json
import logging
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import weight_relay
from weight_relay import (
    ClosedError,
    InstanceStatus,
    LoaderClient,
    NotRegisteredError,
    ProtocolError,
    PublisherClient,
    RelayError,
    StagingMapError,
    UnknownNameError,
    UpdateFailedError,
    UpdateProgress,
    UpdateTimeoutError,
    UsageError,
)

SRC = Path(__file__).resolve().parents[1] / "src"


class _FakeLoader:
    """The loader's answers for one instance whose compat buffer is the file ``path``: an image
    of one fp32 tensor ``w`` of 4 elements, and updates that end with ``outcome``."""

    base_url = "http://loader.invalid"

    def __init__(self, path: str, outcome: str = "UPDATED", placed: bool = True) -> None:
        self.path = path
        self.outcome = outcome
        self.placed = placed
        self.polls = 0

    def call(self, method: str, path: str, body: Any = None, what: str = "") -> Any:
        progress = {"updateId": "u1", "generation": 7, "phase": "DONE", "outcome": self.outcome,
                    "bytesDone": 16, "bytesTotal": 16, "error": None, "failingPeer": None}
        if method == "GET" and path == "/api/v1/instance":
            size = os.path.getsize(self.path)
            return {"instanceId": "i0", "model": "m", "group": "g", "node": "n0", "epoch": 3,
                    "generation": 7, "workers": [{"workerId": "i0-w0", "mode": "compat"}],
                    "buffers": [{"workerId": "i0-w0", "bufferId": "safetensors",
                                 "segment": "seg", "offset": 0, "size": size, "state": "PLACED",
                                 **({"shmPath": self.path} if self.placed else {})}]}
        if method == "POST" and path == "/api/v1/updates":
            return {**progress, "phase": "IDLE", "outcome": "RUNNING"}
        if method == "GET" and path.startswith("/api/v1/updates/"):
            self.polls += 1
            if self.outcome == "RUNNING":
                return {**progress, "phase": "APPLYING"}
            return progress
        raise AssertionError(f"unexpected call {method} {path}")


def _image(tmp_path: Path) -> tuple[str, np.ndarray]:
    """A safetensors image of one fp32 tensor in a file, as a compat buffer holds it."""
    values = np.arange(4, dtype="<f4")
    header = json.dumps({"w": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}}).encode()
    header += b" " * (-len(header) % 8)
    path = tmp_path / "image.shm"
    path.write_bytes(len(header).to_bytes(8, "little") + header + values.tobytes())
    return str(path), values


def _loader(fake: _FakeLoader) -> LoaderClient:
    lc = LoaderClient("http://loader.invalid", poll=0.001)
    lc.rest = fake  # type: ignore[assignment]
    return lc


def test_answers_are_dataclasses_that_keep_the_whole_answer(tmp_path: Path) -> None:
    path, _ = _image(tmp_path)
    with _loader(_FakeLoader(path)) as lc:
        st = lc.status()
        assert isinstance(st, InstanceStatus)
        assert (st.instance_id, st.epoch, st.generation) == ("i0", 3, 7)
        assert st.buffers[0].shm_path == path and st.buffers[0].size == os.path.getsize(path)
        p = lc.update()
        assert isinstance(p, UpdateProgress) and p.updated and p.generation == 7
        assert p.raw["bytesTotal"] == 16


class _SplitLoader:
    """A loader whose update stops at FETCHED until the engine asks to install; with
    ``fail_fetch`` it ends RESUMED_OLD before that."""

    def __init__(self, fail_fetch: bool = False) -> None:
        self.fail_fetch = fail_fetch
        self.calls: list[tuple[str, str, Any]] = []
        self.installed = False
        self.declined: str | None = None

    def call(self, method: str, path: str, body: Any = None, what: str = "") -> Any:
        self.calls.append((method, path, body))
        path, _, query = path.partition("?")
        if method == "GET":
            assert query.startswith("waitMs="), "an update is followed with long polls"
        base = {"updateId": "u1", "generation": 8, "bytesDone": 16, "bytesTotal": 16}
        if method == "POST" and path == "/api/v1/updates":
            return {**base, "phase": "PREPARING", "outcome": "RUNNING"}
        if method == "POST" and path == "/api/v1/updates/u1/install":
            self.installed = True
            return {**base, "phase": "INSTALLING", "outcome": "RUNNING"}
        if method == "POST" and path == "/api/v1/updates/u1/decline":
            self.declined = (body or {}).get("reason", "no reason given")
            return {**base, "phase": "FETCHED", "outcome": "RUNNING"}
        if method == "GET" and path == "/api/v1/updates/u1":
            if self.declined is not None:
                return {**base, "phase": "RESUMED_OLD", "outcome": "RESUMED_OLD",
                        "failingPeer": "i0",
                        "error": f"the engine declined to install generation 8: {self.declined}"}
            if self.fail_fetch:
                return {**base, "phase": "RESUMED_OLD", "outcome": "RESUMED_OLD",
                        "failingPeer": "i1", "error": "i1 stopped pushing"}
            if not self.installed:
                return {**base, "phase": "FETCHED", "outcome": "RUNNING",
                        "durations": {"fetchMs": 900}}
            return {**base, "phase": "DONE", "outcome": "UPDATED",
                    "durations": {"fetchMs": 900, "installMs": 40, "pauseMs": 40}}
        raise AssertionError(f"unexpected call {method} {path}")


def test_fetch_while_serving_then_install_in_the_pause() -> None:
    fake = _SplitLoader()
    lc = LoaderClient("http://loader.invalid", poll=0.001)
    lc.rest = fake  # type: ignore[assignment]
    fetched = lc.fetch(8, 60)
    assert fetched.fetched and fetched.fetch_s == 0.9
    assert fake.calls[0] == ("POST", "/api/v1/updates",
                             {"timeoutSeconds": 60, "install": "onRequest", "generation": 8})
    assert not fake.installed
    done = lc.install(fetched.update_id, 60)
    assert done.updated and (done.install_s, done.pause_s) == (0.04, 0.04)
    assert ("POST", "/api/v1/updates/u1/install", None) in fake.calls


def test_a_fetched_update_the_engine_cannot_take_is_declined_with_its_reason() -> None:
    fake = _SplitLoader()
    lc = LoaderClient("http://loader.invalid", poll=0.001)
    lc.rest = fake  # type: ignore[assignment]
    fetched = lc.fetch(8, 60)
    ended = lc.decline(fetched.update_id, "session open " + "x" * 3000)
    assert ended.outcome == "RESUMED_OLD" and "declined to install generation 8" in ended.error
    assert not fake.installed
    sent = [b for m, p, b in fake.calls if p == "/api/v1/updates/u1/decline"]
    assert len(sent) == 1 and len(sent[0]["reason"]) == 2000, "the reason is cut to the limit"


def test_a_fetch_that_fails_raises_and_never_installs() -> None:
    fake = _SplitLoader(fail_fetch=True)
    lc = LoaderClient("http://loader.invalid", poll=0.001)
    lc.rest = fake  # type: ignore[assignment]
    with pytest.raises(UpdateFailedError) as failed:
        lc.fetch(8, 60)
    assert failed.value.progress.outcome == "RESUMED_OLD"
    assert not fake.installed


def test_an_answer_without_a_required_field_is_a_protocol_error() -> None:
    with pytest.raises(ProtocolError, match="updateId"):
        UpdateProgress.from_json({"generation": 1, "phase": "DONE", "outcome": "UPDATED"})


def _mapped(path: str) -> bool:
    """Whether this process maps ``path`` now."""
    with open("/proc/self/maps") as f:
        return any(line.rstrip().endswith(path) for line in f)


def test_close_unmaps_and_is_idempotent_but_a_live_view_stays_readable(tmp_path: Path) -> None:
    path, values = _image(tmp_path)
    lc = _loader(_FakeLoader(path))
    view = lc.compat_tensors(framework="numpy")["w"]
    torch_view = lc.compat_tensors(framework="torch")["w"]
    assert np.array_equal(view, values) and not view.flags.owndata
    lc.close()
    lc.close()
    assert lc.closed
    # the views hold the mapping: it stays mapped, and right, until the last of them is gone
    assert _mapped(path)
    assert np.array_equal(view, values)
    assert torch_view.tolist() == values.tolist()
    del view, torch_view
    gc.collect()
    assert not _mapped(path)
    with pytest.raises(ClosedError):
        lc.compat_tensors(framework="numpy")


def test_a_client_as_context_manager_closes_on_exit(tmp_path: Path) -> None:
    path, _ = _image(tmp_path)
    with _loader(_FakeLoader(path)) as lc:
        lc.buffer_map()
    assert lc.closed
    with pytest.raises(ClosedError):
        lc.buffer_map()
    with PublisherClient("http://publisher.invalid", "t") as pc:
        pass
    pc.close()
    assert pc.closed
    with pytest.raises(ClosedError):
        pc.staging_map()


def test_every_error_the_clients_raise_is_a_relay_error(tmp_path: Path) -> None:
    path, _ = _image(tmp_path)
    with pytest.raises(UnknownNameError, match="no worker nobody") as unknown:
        _loader(_FakeLoader(path)).compat_tensors("nobody")
    assert str(unknown.value) == "no worker nobody in instance i0"  # not KeyError's quoting
    with pytest.raises(NotRegisteredError, match="not registered yet"):
        _loader(_FakeLoader(path, placed=False)).compat_tensors(framework="numpy")
    with pytest.raises(UpdateTimeoutError, match="still APPLYING"):
        _loader(_FakeLoader(path, outcome="RUNNING")).wait("u1", deadline_s=0.01)
    with pytest.raises(UsageError, match="not an http"):
        LoaderClient("ftp://x")

    class NoStaging:
        base_url = "http://publisher.invalid"

        def call(self, method: str, path: str, body: Any = None, what: str = "") -> Any:
            return {"path": str(tmp_path / "missing.shm"), "fileSize": 4096, "node": "n0"}

        call_object = call

    pc = PublisherClient("http://publisher.invalid", "t")
    pc.rest = NoStaging()  # type: ignore[assignment]
    with pytest.raises(StagingMapError, match="publisher's node") as e:
        pc.staging_map()
    assert isinstance(e.value, OSError) and e.value.errno is not None
    for cls in (UsageError, UnknownNameError, NotRegisteredError, UpdateTimeoutError,
                StagingMapError, ProtocolError, ClosedError, UpdateFailedError):
        assert issubclass(cls, RelayError), cls
    # the standard types callers already catch still match
    assert issubclass(UsageError, ValueError) and issubclass(UnknownNameError, KeyError)
    assert issubclass(UpdateTimeoutError, TimeoutError)


def test_a_failed_update_raises_and_logs_to_the_weight_relay_logger(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path, _ = _image(tmp_path)
    caplog.set_level(logging.INFO, logger="weight_relay")
    with pytest.raises(UpdateFailedError) as e:
        _loader(_FakeLoader(path, outcome="RESUMED_OLD")).update()
    assert e.value.outcome == "RESUMED_OLD" and e.value.progress.generation == 7
    records = [r for r in caplog.records if r.name == "weight_relay.loader"]
    assert any(r.levelno == logging.WARNING and "ended RESUMED_OLD" in r.getMessage()
               for r in records), [r.getMessage() for r in records]
    # the package adds no handler beyond a NullHandler: what is shown is the application's choice
    handlers = logging.getLogger("weight_relay").handlers
    assert all(isinstance(h, logging.NullHandler) for h in handlers)


def test_the_package_ships_its_types() -> None:
    assert (Path(weight_relay.__file__).parent / "py.typed").is_file()


def _import_adapter(module: str, fake_framework: dict[str, str], tmp_path: Path
                    ) -> subprocess.CompletedProcess[str]:
    """Imports ``module`` in a fresh interpreter whose path puts the files of
    ``fake_framework`` (relative path -> source) first."""
    root = tmp_path / "site"
    for rel, source in fake_framework.items():
        f = root / rel
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(textwrap.dedent(source))
    code = (f"import logging, sys; logging.basicConfig(level=logging.WARNING); "
            f"import {module} as m; print('STANDIN', m.STANDIN)")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), str(SRC)])}
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          timeout=120)


# Each adapter's framework: its package and the module (relative to it) the adapter imports first.
_FRAMEWORKS = {"vllm": ("vllm", "distributed/weight_transfer/base.py"),
               "sglang": ("sglang", "srt/runtime_context.py"),
               "verl": ("verl", "checkpoint_engine/base.py")}


@pytest.mark.parametrize("adapter", sorted(_FRAMEWORKS))
def test_a_broken_framework_install_fails_loudly_instead_of_becoming_a_stand_in(
        adapter: str, tmp_path: Path) -> None:
    # the framework's packages import, and the module the adapter needs raises on import
    package, leaf = _FRAMEWORKS[adapter]
    parts = [package, *leaf.split("/")[:-1]]
    broken = {"/".join([*parts[:i], "__init__.py"]): "" for i in range(1, len(parts) + 1)}
    broken[f"{package}/{leaf}"] = \
        f"raise RuntimeError('{package} is half installed: a CUDA library is missing')\n"
    r = _import_adapter(f"weight_relay.adapters.{adapter}", broken, tmp_path)
    assert r.returncode != 0, f"a broken {package} gave STANDIN: {r.stdout} {r.stderr}"
    assert f"RuntimeError: {package} is half installed" in r.stderr, r.stderr
    assert "STANDIN" not in r.stdout


@pytest.mark.parametrize("adapter", sorted(_FRAMEWORKS))
def test_a_missing_framework_gives_the_named_stand_in_with_a_warning(
        adapter: str, tmp_path: Path) -> None:
    # a framework package that stops importing where the adapter needs it: an ImportError
    package, _ = _FRAMEWORKS[adapter]
    missing = {f"{package}/__init__.py": f"raise ImportError('No module named {package} (test)')\n"}
    r = _import_adapter(f"weight_relay.adapters.{adapter}", missing, tmp_path)
    assert r.returncode == 0, r.stderr
    assert "STANDIN True" in r.stdout
    # a warning from the adapter's own logger that names the stand-in and why
    assert f"WARNING:weight_relay.adapters.{adapter}:" in r.stderr, r.stderr
    assert "does not import here" in r.stderr and "STANDIN = True" in r.stderr, r.stderr
    assert f"No module named {package} (test)" in r.stderr, r.stderr


def test_a_transfer_engine_buffer_is_declared_as_the_loader_contract_says() -> None:
    """A worker receiving into memory of its own Transfer Engine declares each buffer in it, packed
    as the loader packs a segment, with the engine's segment and the memory's address; buffers
    that reach past the registered memory are refused before anything is sent."""
    from weight_relay import Manifest, TensorSpec, direct_worker, tensor_parallel_fragments
    from weight_relay.loader import buffer_offsets
    from weight_relay.mooncake_client import ReceiveBuffer

    manifest = Manifest("m", [TensorSpec("a", (4, 8), "bf16", "bf16"),
                              TensorSpec("b", (8,), "fp32", "fp32")])
    fragments = tensor_parallel_fragments(manifest, 2, 0, {"a": 0})
    memory = ReceiveBuffer("127.0.0.1:15001", 0x7F0000001000, 1 << 20)
    worker = direct_worker("w0", "n0", "w0-te", manifest, fragments, transfer_engine=memory)
    te = {"segment": "127.0.0.1:15001", "address": 0x7F0000001000}
    assert worker["buffers"] == [{"bufferId": "params", "segment": "w0-te", "size": 96,
                                  "transferEngine": te}]
    assert worker["mode"] == "direct" and len(worker["fragments"]) == 2
    two = [fragments[0], dataclasses.replace(fragments[1], buffer_id="x", buffer_offset=0)]
    assert [b["size"] for b in direct_worker("w0", "n0", "w0-te", manifest, two,
                                             transfer_engine=memory)["buffers"]] == [32, 32]
    assert buffer_offsets({"params": 32, "x": 32, "y": 1}) == {"params": 0, "x": 4096, "y": 8192}
    with pytest.raises(UsageError, match="holds 4097"):
        direct_worker("w0", "n0", "w0-te", manifest, two,
                      transfer_engine=ReceiveBuffer("127.0.0.1:15001", 4096, 4097))
    with pytest.raises(UsageError):
        memory.registration("", "w0-te")
    with pytest.raises(UsageError):
        memory.registration("params", "w0-te", (1 << 20) + 1)
