"""VeRL's own ``CheckpointEngineManager`` driven for real, with Ray's transport replaced by forked
processes (Ray itself would start a cluster and import VeRL in every worker: minutes on this
machine). Each Ray actor becomes a :class:`Proc`: one forked process holding one worker object,
calls run one at a time in the order they were made (a Ray actor's default), each answered by a
``Future`` (an ``ObjectRef``). :class:`ProcWorkerGroup` dispatches as ``RayWorkerGroup`` does for
the methods the manager calls (``execute_checkpoint_engine`` DP_COMPUTE, ``update_weights``
ONE_TO_ALL), so the manager's own ``update_weights`` runs unchanged: prepare everywhere,
``build_topology``, ``init_process_group`` everywhere, then every actor's ``send_weights`` and
every rollout worker's ``receive_weights`` at once (one ``ray.get`` over both), then ``finalize``.

Inside the processes: the rollout workers are VeRL's real ``CheckpointEngineWorker`` (its
``__init__`` builds the engine from the rollout config's shared ``engine_kwargs`` and joins the
replica's gloo group, its ``update_weights`` feeds ``receive_weights`` to the server adapter); the
actor ranks are :class:`ActorRank`, the checkpoint-engine part of VeRL's ``ActorRolloutRefWorker``
(``engine_workers.py``: the engine built with ``is_master`` for rank 0 from the same shared
``engine_kwargs``, ``update_weights`` sending the per-tensor params)."""

from __future__ import annotations

import asyncio
import multiprocessing as mp
import os
import queue
import socket
import threading
import traceback
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

import torch

from weight_relay import LoaderClient

_FORK = mp.get_context("fork")  # the children inherit the imported VeRL (30 s to import here)


class WorkerError(RuntimeError):
    """A call that raised inside a worker process; the message carries its traceback."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def engine_kwargs(lab: dict[str, Any], manifest_json: dict[str, Any], group: str,
                  sync_timeout_s: float) -> tuple[dict[str, Any], dict[str, list[str]]]:
    """The one ``checkpoint_engine.engine_kwargs.weight_relay`` dict VeRL hands to every actor
    rank and every rollout worker of a lab, and the nodes the processes run on (their
    environment): ``trainer``, one per publisher, and ``rollout``, each instance's loader's."""
    loaders = {i: LoaderClient(lab["services"]["loader-" + i], lab["loaderTokens"][i])
               for i in lab["instances"]}
    loader_nodes = {i: lc.status().node for i, lc in loaders.items()}
    publishers = {n[len("publisher-"):]: u for n, u in lab["services"].items()
                  if n.startswith("publisher-")}
    kwargs = {"control_url": lab["controlUrl"], "manifest": manifest_json,
              "trainer_token": lab["trainerToken"], "loader_token": dict(lab["loaderTokens"]),
              "publisher_urls": publishers,
              "loader_urls": {loader_nodes[i]: lab["services"]["loader-" + i]
                              for i in lab["instances"]},
              "instances": list(lab["instances"]), "group": group,
              "sync_timeout_s": sync_timeout_s}
    return kwargs, {"trainer": sorted(publishers), "rollout": [loader_nodes[i]
                                                               for i in lab["instances"]]}


def _serve(conn: Any, env: dict[str, str], build: Callable[[], Any]) -> None:
    # A forked child must not enter the OpenMP pool the parent already used (libgomp hangs
    # there): one intra-op thread takes torch's serial path.
    torch.set_num_threads(1)
    os.environ.update(env)
    try:
        target = build()
        conn.send((True, None))
    except BaseException as e:
        conn.send((False, f"{type(e).__name__}: {e}\n{traceback.format_exc()}"))
        return
    while True:
        request = conn.recv()
        if request is None:
            return
        method, args, kwargs = request
        try:
            fn: Any = target
            for part in method.split("."):
                fn = getattr(fn, part)
            result = fn(*args, **kwargs)
            if asyncio.iscoroutine(result):
                result = asyncio.run(result)
            conn.send((True, result))
        except BaseException as e:
            conn.send((False, f"{type(e).__name__}: {e}\n{traceback.format_exc()}"))


class Proc:
    """A Ray actor as a forked process; ``call`` returns a Future."""

    def __init__(self, name: str, env: dict[str, str], build: Callable[[], Any]) -> None:
        self.name = name
        self._conn, child = _FORK.Pipe()
        self._proc = _FORK.Process(target=_serve, args=(child, env, build), name=name,
                                   daemon=True)
        self._proc.start()
        child.close()
        self._calls: queue.Queue[Any] = queue.Queue()
        self.ready: Future[Any] = Future()
        threading.Thread(target=self._dispatch, daemon=True, name=f"{name}-calls").start()

    def _dispatch(self) -> None:
        ok, value = self._conn.recv()
        if not ok:
            self.ready.set_exception(WorkerError(f"{self.name}: {value}"))
            return
        self.ready.set_result(None)
        while True:
            item = self._calls.get()
            if item is None:
                self._conn.send(None)
                return
            method, args, kwargs, fut = item
            self._conn.send((method, args, kwargs))
            ok, value = self._conn.recv()
            if ok:
                fut.set_result(value)
            else:
                fut.set_exception(WorkerError(f"{self.name}.{method}: {value}"))

    def call(self, method: str, *args: Any, **kwargs: Any) -> Future[Any]:
        fut: Future[Any] = Future()
        fut.call = f"{self.name}.{method}"  # type: ignore[attr-defined]
        self._calls.put((method, args, kwargs, fut))
        return fut

    def stop(self) -> None:
        self._calls.put(None)
        self._proc.join(30)
        if self._proc.is_alive():
            self._proc.terminate()
            self._proc.join(10)


def ray_get(refs: Any) -> Any:
    """``ray.get`` over Futures: waits for each in order, raises the first failure."""
    if isinstance(refs, list):
        return [_result(r) for r in refs]
    return _result(refs)


def _result(ref: Future[Any]) -> Any:
    try:
        return ref.result(timeout=600)
    except TimeoutError as e:
        raise WorkerError(f"{getattr(ref, 'call', 'a call')} still running after 600 s") from e


class ProcWorkerGroup:
    """``RayWorkerGroup(worker_handles=...)`` as the manager uses it."""

    def __init__(self, worker_handles: list[Proc], ray_cls_with_init: Any = None) -> None:
        self.workers = worker_handles

    @property
    def world_size(self) -> int:
        return len(self.workers)

    def execute_checkpoint_engine(self, method: list[str], *args: list[Any],
                                  **kwargs: list[Any]) -> list[Future[Any]]:
        """DP_COMPUTE: the i-th of every argument list goes to the i-th worker."""
        return [w.call("execute_checkpoint_engine", method[i], *[a[i] for a in args],
                       **{k: v[i] for k, v in kwargs.items()}) for i, w in enumerate(self.workers)]

    def update_weights(self, **kwargs: Any) -> list[Future[Any]]:
        """ONE_TO_ALL: the same arguments to every worker."""
        return [w.call("update_weights", **kwargs) for w in self.workers]


class Replica:
    """What ``CheckpointEngineManager`` uses of a ``RolloutReplica``: its workers and its server's
    request gates (no inference server runs here: the gates only record that they were called)."""

    def __init__(self, replica_rank: int, workers: list[Proc]) -> None:
        self.replica_rank = replica_rank
        self.workers = workers
        self.gates: list[str] = []

    async def abort_all_requests(self, reject_request: bool = False) -> None:
        self.gates.append("abort")

    async def release_kv_cache(self) -> None:
        self.gates.append("release_kv_cache")

    async def resume_kv_cache(self) -> None:
        self.gates.append("resume_kv_cache")

    async def resume_generation(self) -> None:
        self.gates.append("resume_generation")


class ActorRank:
    """The checkpoint-engine part of VeRL 0.9.1's ``ActorRolloutRefWorker`` (engine_workers.py),
    run in the actor's process: the trainer's gloo group, the engine built from the shared
    ``engine_kwargs`` with ``is_master`` for rank 0, and ``update_weights`` sending the model
    engine's per-tensor params (every rank yields every full tensor, as FSDP's does)."""

    def __init__(self, ce_config: Any, weights_of_step: Callable[[int], dict[str, torch.Tensor]]
                 ) -> None:
        import torch.distributed as dist
        from verl.checkpoint_engine import CheckpointEngineRegistry
        from verl.utils.distributed import initialize_global_process_group_ray
        from verl.utils.import_utils import import_external_libs

        initialize_global_process_group_ray(timeout_second=None, backend="cpu:gloo")
        backend = ce_config.backend
        bucket_size = ce_config.update_weights_bucket_megabytes << 20
        engine_kwargs = ce_config.engine_kwargs.get(backend, {})
        import_external_libs(ce_config.custom_backend_module or None)
        self.checkpoint_engine = CheckpointEngineRegistry.new(
            backend, is_master=(dist.get_rank() == 0), bucket_size=bucket_size, **engine_kwargs)
        self.weights_of_step = weights_of_step
        self.replaced: dict[int, dict[str, torch.Tensor]] = {}

    def replace(self, step: int, tensors: dict[str, torch.Tensor]) -> None:
        """What the trainer yields for ``step`` instead of ``weights_of_step``'s (``{}``: none)."""
        self.replaced[step] = tensors

    async def update_weights(self, global_steps: int | None = None, mode: str = "auto") -> dict:
        step = int(global_steps or 0)
        weights = {**self.weights_of_step(step), **self.replaced.get(step, {})}
        per_tensor_param = ((n, t) for n, t in weights.items())
        metrics = await self.checkpoint_engine.send_weights(per_tensor_param,
                                                            global_steps=global_steps)
        return metrics or {}

    def execute_checkpoint_engine(self, method: str, *args: Any, **kwargs: Any) -> Any:
        return getattr(self.checkpoint_engine, method)(*args, **kwargs)


def _shared_mappings() -> list[tuple[int, int]]:
    """Address ranges of this process's shared file mappings (the loader's receive buffers)."""
    out = []
    with open("/proc/self/maps", encoding="utf-8") as fh:
        for line in fh:
            fields = line.split()
            if len(fields) >= 6 and fields[1].endswith("s"):
                lo, hi = (int(x, 16) for x in fields[0].split("-"))
                out.append((lo, hi))
    return out


class ServerAdapter:
    """The rollout server adapter a ``CheckpointEngineWorker`` feeds: it loads what
    ``receive_weights`` yields into the engine's own parameters (a copy, as a CUDA IPC load into
    the engine's weights is), and remembers the step it loaded."""

    def __init__(self, replica_rank: int, is_leader_rank: bool) -> None:
        self.replica_rank = replica_rank
        self.is_leader_rank = is_leader_rank
        self.params: dict[str, torch.Tensor] = {}
        self.loaded_steps: list[int | None] = []
        self.copied_on_the_way = 0  # tensors handed over outside a shared file mapping

    def copies(self) -> int:
        return self.copied_on_the_way

    async def update_weights(self, weights: Any, global_steps: int | None = None,
                             wire_format: str = "named_tensors", **_: Any) -> None:
        from verl.workers.rollout.utils import ensure_async_iterator

        assert wire_format == "named_tensors", wire_format
        shared: list[tuple[int, int]] = []
        loaded = {}
        async for name, tensor in ensure_async_iterator(weights):
            shared = shared or _shared_mappings()  # the image is mapped by the first yield
            if tensor.numel():
                self.copied_on_the_way += not any(lo <= tensor.data_ptr() < hi for lo, hi in shared)
            loaded[name] = tensor.clone()
        self.params = loaded
        self.loaded_steps.append(global_steps)

    def held(self) -> dict[str, torch.Tensor]:
        return self.params


def rollout_worker(rollout_config: Any, replica_rank: int, rank: int) -> Any:
    """VeRL's real ``CheckpointEngineWorker`` with :class:`ServerAdapter` as its server adapter."""
    from verl.checkpoint_engine.base import CheckpointEngineWorker

    return CheckpointEngineWorker(rollout_config, None,
                                  ServerAdapter(replica_rank, is_leader_rank=rank == 0))
