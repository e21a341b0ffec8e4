"""VeRL: a checkpoint-engine backend ``weight_relay`` in the shape of VeRL 0.9.1's
``verl.checkpoint_engine.base.CheckpointEngine``, registered in ``CheckpointEngineRegistry`` when
this module is imported, i.e. by ``checkpoint_engine.custom_backend_module:
weight_relay.adapters.verl`` and ``checkpoint_engine.backend: weight_relay``.

Engine kwargs (``checkpoint_engine.engine_kwargs.weight_relay``): ``control_url``, ``token`` and
``manifest`` (a :class:`~weight_relay.Manifest`, its JSON dict, or a path to that JSON) on the
actor side, plus ``publisher_url`` on the one rank per trainer node that publishes (the others
only drain the generator); ``loader_url``, ``instance_id``, ``worker_id`` and, on the worker that
registers the instance, ``registration`` (``{model, group, node, workers}``) on the rollout side.
``barrier`` (a callable) syncs the actor ranks before the coordinator (rank 0) commits; the
default is ``torch.distributed.barrier`` when a process group is up."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncGenerator, Callable, Generator
from typing import Any

from ..errors import PublishFailedError, RelayCallError, UsageError
from ..loader import LoaderClient
from ..manifest import Manifest
from ..publisher import ControlClient, PublisherClient

_log = logging.getLogger(__name__)

try:  # the real classes when VeRL imports here
    from verl.checkpoint_engine.base import CheckpointEngine as _Base
    from verl.checkpoint_engine.base import CheckpointEngineRegistry

    STANDIN = False
except ImportError as _missing:  # only a missing VeRL: a broken install raises, never hides
    from ._standin import CheckpointEngine as _Base  # type: ignore[assignment]
    from ._standin import CheckpointEngineRegistry  # type: ignore[assignment]

    STANDIN = True
    _log.warning("VeRL does not import here (%s): weight_relay.adapters.verl uses the stand-in "
                 "of VeRL 0.9.1's checkpoint-engine interface (STANDIN = True)", _missing)

BACKEND = "weight_relay"


def _manifest(m: Any) -> Manifest | None:
    if m is None or isinstance(m, Manifest):
        return m
    if isinstance(m, str):
        with open(m, encoding="utf-8") as fh:
            m = json.load(fh)
    return Manifest.from_json(m)


def _default_barrier() -> None:
    try:
        import torch.distributed as dist

        if dist.is_available() and dist.is_initialized():
            dist.barrier()
    except ImportError:
        pass


@CheckpointEngineRegistry.register(BACKEND)
class WeightRelayCheckpointEngine(_Base):  # type: ignore[misc,valid-type]
    """Actor ranks publish into their node's publisher; rollout workers read their loader's
    image. No NCCL group: ``build_topology`` only hands out ranks."""

    def __init__(self, bucket_size: int = 0, *, control_url: str | None = None,
                 token: str | None = None, manifest: Any = None,
                 publisher_url: str | None = None, loader_url: str | None = None,
                 instance_id: str | None = None, worker_id: str | None = None,
                 registration: dict[str, Any] | None = None,
                 barrier: Callable[[], None] | None = None, **_: Any) -> None:
        self.bucket_size = bucket_size
        self.control = ControlClient(control_url, token) if control_url else None
        self.manifest = _manifest(manifest)
        self.publisher = PublisherClient(publisher_url, token, coordinator=self.control) \
            if publisher_url else None
        self.loader = LoaderClient(loader_url, token) if loader_url else None
        self.instance_id = instance_id
        self.worker_id = worker_id
        self.registration = registration
        self.barrier = barrier or _default_barrier
        self.rank = 0
        self.world_size = 1
        self.generation: int | None = None
        self._registered = False

    def prepare(self) -> dict[str, Any]:
        if self.loader is not None:
            if self.registration and not self._registered:
                if self.instance_id is None:
                    raise UsageError("the registering rollout worker needs the instance_id "
                                     "engine kwarg")
                r = self.registration
                self.loader.register(self.instance_id, r["model"], r["group"], r["node"],
                                     r["workers"])
                self._registered = True
            return {"role": "rollout", "instance": self.instance_id, "worker": self.worker_id}
        node = self.publisher.node if self.publisher else None
        return {"role": "actor", "node": node}

    @classmethod
    def build_topology(cls, actor_wg_world_size: int, rollout_world_size: int,
                       metadata: list[dict]) -> tuple[dict[str, list], dict[str, list]]:
        nodes = sorted({m["node"] for m in metadata[:actor_wg_world_size] if m.get("node")})
        actor: dict[str, list[Any]] = {"rank": list(range(actor_wg_world_size)),
                 "world_size": [actor_wg_world_size] * actor_wg_world_size,
                 "trainer_nodes": [nodes] * actor_wg_world_size}
        rollout = {"rank": list(range(rollout_world_size)),
                   "world_size": [rollout_world_size] * rollout_world_size}
        return actor, rollout

    def init_process_group(self, rank: int = 0, world_size: int = 1,
                           trainer_nodes: list[str] | None = None, **_: Any) -> None:
        self.rank, self.world_size = rank, world_size
        self.trainer_nodes = trainer_nodes or []

    async def send_weights(self, weights: Generator[tuple[str, Any], None, None],
                           global_steps: int | None = None) -> None:
        """On every actor rank: the generation of ``global_steps`` is opened (idempotently), the
        generator drained completely (collective order), the publishing rank stages what its
        node is assigned; after the barrier rank 0 commits, or aborts and raises."""
        if self.control is None or self.manifest is None:
            raise UsageError("the actor side needs control_url and manifest engine kwargs")
        step = int(global_steps or 0)
        failure = None
        walk = None
        try:
            opened = self.control.open_generation(self.manifest, step, self.trainer_nodes)
            self.generation = opened.generation
            if self.publisher is not None:
                walk = self.publisher.begin(self.manifest, opened)
        except RelayCallError as e:
            failure = str(e)
        for name, tensor in weights:  # every rank drains the generator (collectives in order)
            if walk is not None:
                walk.add(name, tensor)
        if walk is not None:
            result = walk.finish()
            failure = failure or result.failure
        self.barrier()
        if self.rank == 0 and self.generation is not None:
            try:
                if failure is None:
                    self.control.commit(self.manifest.model, self.generation)
                    return
            except RelayCallError as e:
                failure = f"commit refused: {e}"
            self.control.abort(self.manifest.model, self.generation, failure or "failed")
        if failure is not None:
            raise PublishFailedError(self.generation or 0, f"generation {self.generation} "
                                     f"failed: {failure}", {str(self.rank): failure})

    # VeRL's base annotates a coroutine returning a Generator, while its own engines (nccl, hccl,
    # kimi, mooncake) are async generators, as this one is.
    async def receive_weights(  # type: ignore[override]
            self, global_steps: int | None = None) -> AsyncGenerator[tuple[str, Any], None]:
        """Updates this instance to the active generation through its loader, then yields the
        worker's tensors, zero-copy views of its compat image. A failed update raises before
        anything is yielded: the rollout keeps its old weights."""
        if self.loader is None:
            raise UsageError("the rollout side needs the loader_url engine kwarg")
        if self.rank == 0 or self.registration:
            progress = self.loader.update(None)
            self.generation = progress.generation
        for item in self.loader.compat_tensors(self.worker_id, framework="torch").items():
            yield item

    def finalize(self) -> None:
        """Nothing to free: receive buffers stay registered for the next generation."""
