"""VeRL: a checkpoint-engine backend ``weight_relay`` in the shape of VeRL 0.9.1's
``verl.checkpoint_engine.base.CheckpointEngine``, registered in ``CheckpointEngineRegistry`` when
this module is imported, i.e. by ``checkpoint_engine.custom_backend_module:
weight_relay.adapters.verl`` and ``checkpoint_engine.backend: weight_relay``.

VeRL hands the one ``checkpoint_engine.engine_kwargs.weight_relay`` dict to every actor rank and
every rollout worker, so nothing in it is per process. Roles come from the topology VeRL builds
each sync (``CheckpointEngineManager.build_process_group``): every process's :meth:`prepare`
reports where it runs (``node``: ``$WEIGHT_RELAY_NODE``, else the host name; ``host``, ``pid``
and VeRL's ``RANK``), and :meth:`build_topology` makes the first actor rank on each trainer node
that node's publisher (the others only drain the generator, which every rank must), actor rank 0
the coordinator (it commits), and in each rollout replica (a new one starts at each worker whose
``RANK`` is 0) worker 0 the updater of the replica's loader instance, ``instances[replica]``.

Engine kwargs (all shared):

- ``control_url``, ``manifest`` (a :class:`~weight_relay.Manifest`, its JSON dict, or a path to
  that JSON): both sides;
- ``trainer_token``; ``loader_token``, one string or ``{instance: token}`` (loader tokens are
  bound to their instance); ``$WEIGHT_RELAY_TRAINER_TOKEN`` / ``$WEIGHT_RELAY_LOADER_TOKEN``
  stand in for either;
- ``publisher_urls`` / ``loader_urls``: ``{node: url}`` of each node's own publisher / loader;
  without the map, ``$WEIGHT_RELAY_PUBLISHER_URL`` / ``$WEIGHT_RELAY_LOADER_URL`` set per node;
- ``instances``: the loader instance id of each replica, in replica order (default
  ``{group}-r{replica}``); ``group`` (default the model name): the instances' update group;
- ``sync_timeout_s`` (default 600): how long ``receive_weights`` waits for its step's commit;
- ``barrier`` (a callable, for use without VeRL): syncs the actor ranks before the coordinator
  commits; the default is ``torch.distributed.barrier`` when a process group is up.

VeRL runs every actor's ``send_weights`` and every rollout worker's ``receive_weights`` at once,
so ``receive_weights(global_steps=S)`` does not load "what is active": it waits until the
generation opened for trainer step ``S`` is committed (control-api's
``GET .../generations?trainerStep=S``) and loads exactly that one; syncing a step again (VeRL's
validation re-sync) re-serves the same generation without publishing or updating anything."""

from __future__ import annotations

import json
import logging
import os
import socket
import time
from collections.abc import AsyncGenerator, Callable, Generator, Mapping
from typing import Any

from ..errors import (
    NotFoundError,
    PublishFailedError,
    RelayError,
    UpdateTimeoutError,
    UsageError,
)
from ..loader import LoaderClient, compat_worker
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
NODE_ENV = "WEIGHT_RELAY_NODE"
COMMITTED = ("ACTIVE", "RETIRED")
_POLL_MAX_S = 0.2


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


def _node_local(what: str, urls: Mapping[str, str] | None, node: str) -> str:
    """The URL of ``node``'s own service: from the ``{node: url}`` map, else the node's env."""
    env = f"WEIGHT_RELAY_{what.upper()}_URL"
    if urls is not None:
        if node not in urls:
            raise UsageError(f"no {what} for node {node} in {what}_urls (nodes: "
                             f"{', '.join(sorted(urls))})")
        return urls[node]
    url = os.environ.get(env)
    if not url:
        raise UsageError(f"node {node} has no {what}: set {what}_urls in the engine kwargs "
                         f"or {env} on the node")
    return url


def _token(what: str, token: str | Mapping[str, str] | None, key: str | None) -> str:
    env = f"WEIGHT_RELAY_{what.upper()}_TOKEN"
    if isinstance(token, Mapping):
        if key is None or key not in token:
            raise UsageError(f"no {what}_token for {key} (given for: "
                             f"{', '.join(sorted(token))})")
        return token[key]
    found = token or os.environ.get(env)
    if not found:
        raise UsageError(f"no {what} token: set {what}_token in the engine kwargs or {env}")
    return found


@CheckpointEngineRegistry.register(BACKEND)
class WeightRelayCheckpointEngine(_Base):  # type: ignore[misc,valid-type]
    """Actor ranks publish into their node's publisher; rollout workers read their instance's
    image from their node's loader. No NCCL group: ``build_topology`` hands out roles."""

    def __init__(self, bucket_size: int = 0, *, control_url: str | None = None,
                 manifest: Any = None, trainer_token: str | None = None,
                 loader_token: str | Mapping[str, str] | None = None,
                 publisher_urls: Mapping[str, str] | None = None,
                 loader_urls: Mapping[str, str] | None = None,
                 instances: list[str] | None = None, group: str | None = None,
                 sync_timeout_s: float = 600.0,
                 barrier: Callable[[], None] | None = None, is_master: bool | None = None,
                 **unknown: Any) -> None:
        if unknown:  # a misspelt key would otherwise surface as a wrong role much later
            raise UsageError(f"unknown weight_relay engine kwargs: {', '.join(sorted(unknown))}")
        if not control_url:
            raise UsageError("the weight_relay engine kwargs need control_url")
        self.bucket_size = bucket_size
        self.control_url = control_url
        self.manifest = _manifest(manifest)
        if self.manifest is None:
            raise UsageError("the weight_relay engine kwargs need manifest")
        self.trainer_token = trainer_token
        self.loader_token = loader_token
        self.publisher_urls = publisher_urls
        self.loader_urls = loader_urls
        self.instances = list(instances) if instances is not None else None
        self.group = group or self.manifest.model
        self.sync_timeout_s = float(sync_timeout_s)
        self.barrier = barrier or _default_barrier
        self.role: str | None = None  # set by init_process_group, from build_topology
        self.node: str | None = None
        self.rank = 0
        self.world_size = 1
        self.trainer_nodes: list[str] = []
        self.coordinator = False
        self.instance_id: str | None = None
        self.worker_id: str | None = None
        self.control: ControlClient | None = None
        self.publisher: PublisherClient | None = None
        self.loader: LoaderClient | None = None
        self.generation: int | None = None
        self._registered: str | None = None
        self._aborted_seen: set[int] = set()

    # ---- topology ------------------------------------------------------------------------------
    def prepare(self) -> dict[str, Any]:
        """Facts about this process, for :meth:`build_topology`; no side effects."""
        host = socket.gethostname()
        rank = os.environ.get("RANK")
        return {"node": os.environ.get(NODE_ENV) or host, "host": host, "pid": os.getpid(),
                "rank": int(rank) if rank is not None else None}

    @classmethod
    def build_topology(cls, actor_wg_world_size: int, rollout_world_size: int,
                       metadata: list[dict[str, Any]]
                       ) -> tuple[dict[str, list[Any]], dict[str, list[Any]]]:
        """``metadata``: the actor ranks' facts, then the rollout workers' (replica after
        replica, as ``CheckpointEngineManager`` lists them)."""
        actors = metadata[:actor_wg_world_size]
        rollouts = metadata[actor_wg_world_size:actor_wg_world_size + rollout_world_size]
        nodes = [m["node"] for m in actors]
        trainer_nodes = sorted(set(nodes))
        actor: dict[str, list[Any]] = {
            "rank": list(range(actor_wg_world_size)),
            "world_size": [actor_wg_world_size] * actor_wg_world_size,
            "role": ["publisher" if nodes.index(n) == i else "drain"
                     for i, n in enumerate(nodes)],
            "node": nodes,
            "coordinator": [i == 0 for i in range(actor_wg_world_size)],
            "trainer_nodes": [trainer_nodes] * actor_wg_world_size}
        replica_of: list[int] = []
        replica_node: dict[int, str] = {}
        for i, m in enumerate(rollouts):
            if m.get("rank") is None:
                raise UsageError(f"rollout worker {i} reported no RANK (VeRL sets it in every "
                                 "worker): its replica is unknown")
            replica = replica_of[-1] + (m["rank"] == 0) if replica_of else 0
            if replica in replica_node and replica_node[replica] != m["node"]:
                raise UsageError(f"replica {replica} spans nodes {replica_node[replica]} and "
                                 f"{m['node']}: one node's loader serves a replica")
            replica_node.setdefault(replica, m["node"])
            replica_of.append(replica)
        rollout: dict[str, list[Any]] = {
            "rank": [m["rank"] for m in rollouts],
            "world_size": [rollout_world_size] * rollout_world_size,
            "role": ["updater" if m["rank"] == 0 else "reader" for m in rollouts],
            "replica": replica_of,
            "node": [m["node"] for m in rollouts]}
        return actor, rollout

    def init_process_group(self, rank: int = 0, world_size: int = 1, role: str = "drain",
                           node: str | None = None, coordinator: bool = False,
                           trainer_nodes: list[str] | None = None, replica: int = 0,
                           **_: Any) -> None:
        """Takes the role :meth:`build_topology` gave; builds this role's clients once; the
        replica is the instance ``instances[replica]``, whose updater registers it with the
        loader once per engine."""
        self.rank, self.world_size, self.role, self.node = rank, world_size, role, node
        self.coordinator = coordinator
        self.trainer_nodes = list(trainer_nodes or [])
        assert self.manifest is not None
        if role in ("publisher", "drain"):
            token = _token("trainer", self.trainer_token, None)
            if self.control is None:
                self.control = ControlClient(self.control_url, token)
            if role == "publisher" and self.publisher is None:
                self.publisher = PublisherClient(
                    _node_local("publisher", self.publisher_urls, node or ""), token,
                    coordinator=self.control)
            return
        if role not in ("updater", "reader"):
            raise UsageError(f"unknown weight_relay role {role!r}")
        if self.instances is None:
            instance = f"{self.group}-r{replica}"
        elif replica < len(self.instances):
            instance = self.instances[replica]
        else:
            raise UsageError(f"replica {replica} has no instance: instances names "
                             f"{len(self.instances)} replica(s)")
        token = _token("loader", self.loader_token, instance)
        if self.control is None:
            self.control = ControlClient(self.control_url, token)
        if self.loader is None:
            self.loader = LoaderClient(_node_local("loader", self.loader_urls, node or ""), token)
        self.instance_id = instance
        self.worker_id = f"{instance}-verl"
        if role == "updater" and self._registered != instance:
            # One compat image per instance: every worker of the replica maps the same bytes.
            worker = compat_worker(self.worker_id, node or "", f"{self.group}-{instance}",
                                   self.manifest)
            self.loader.register(instance, self.manifest.model, self.group, node or "", [worker])
            self._registered = instance

    # ---- the actor side -------------------------------------------------------------------------
    async def send_weights(self, weights: Generator[tuple[str, Any], None, None],
                           global_steps: int | None = None) -> None:
        """On every actor rank: the generation of ``global_steps`` is opened (idempotently) by
        the coordinator and the publishers, the generator drained completely (collective order),
        each publisher stages what its node is assigned; after the barrier the coordinator
        commits, or aborts and raises. A step already committed is not published again."""
        if self.role not in ("publisher", "drain") or self.control is None:
            raise UsageError(f"send_weights on a {self.role or 'not yet placed'} engine "
                             "(init_process_group gives the role)")
        if global_steps is None:
            raise UsageError("send_weights needs global_steps: a generation belongs to a step")
        assert self.manifest is not None
        step = int(global_steps)
        failure = None
        walk = None
        committed = False
        if self.coordinator or self.publisher is not None:
            try:
                opened = self.control.open_generation(self.manifest, step, self.trainer_nodes)
                self.generation = opened.generation
                committed = opened.state in COMMITTED
                if self.publisher is not None and not committed:
                    walk = self.publisher.begin(self.manifest, opened)
            except RelayError as e:  # a refusal or an answer outside the contract: still drain
                failure = str(e)
        for name, tensor in weights:  # every rank drains the generator (collectives in order)
            if walk is not None:
                walk.add(name, tensor)
        if walk is not None:
            result = walk.finish()
            failure = failure or result.failure
        self.barrier()
        if committed:
            _log.info("step %d is generation %d, committed before: served again", step,
                      self.generation)
            return
        if self.coordinator and self.generation is not None:
            try:
                if failure is None:
                    self.control.commit(self.manifest.model, self.generation)
                    return
            except RelayError as e:
                failure = f"commit refused: {e}"
            self.control.abort(self.manifest.model, self.generation, failure or "failed")
        if failure is not None:
            raise PublishFailedError(self.generation or 0, f"step {step}: generation "
                                     f"{self.generation} failed: {failure}",
                                     {str(self.rank): failure})

    # ---- the rollout side -----------------------------------------------------------------------
    def _committed_generation(self, step: int, deadline: float) -> int:
        """The generation opened for ``step``, once committed. An aborted one raises, unless
        this engine already reported it (then the trainer is retrying the step: wait for the
        new one)."""
        assert self.control is not None and self.manifest is not None
        pause = 0.01
        while True:
            try:
                found = self.control.generations(self.manifest.model, trainer_step=step)
            except NotFoundError:  # the model has no generation at all yet
                found = []
            if found:
                g = found[0]
                gen = int(g["generation"])
                if g["state"] in COMMITTED:
                    return gen
                if g["state"] in ("ABORTED", "LOST") and gen not in self._aborted_seen:
                    self._aborted_seen.add(gen)
                    raise PublishFailedError(gen, f"step {step}: generation {gen} is "
                                             f"{g['state']}; the rollout keeps its weights", {})
            if time.monotonic() > deadline:
                state = f"generation {found[0]['generation']} still {found[0]['state']}" \
                    if found else "no generation opened"
                raise UpdateTimeoutError(f"trainer step {step} of {self.manifest.model} not "
                                         f"committed after {self.sync_timeout_s:g} s ({state})")
            time.sleep(pause)
            pause = min(_POLL_MAX_S, pause * 2)

    def _holds(self, generation: int) -> bool:
        assert self.loader is not None and self.manifest is not None
        st = self.loader.status()
        return st.model == self.manifest.model and st.generation == generation

    def _await_instance_at(self, generation: int, step: int, deadline: float) -> None:
        pause = 0.01
        while True:
            try:
                if self._holds(generation):
                    return
            except NotFoundError:  # the updater has not registered the instance yet
                pass
            if time.monotonic() > deadline:
                raise UpdateTimeoutError(f"trainer step {step}: instance {self.instance_id} "
                                         f"not at generation {generation} after "
                                         f"{self.sync_timeout_s:g} s")
            time.sleep(pause)
            pause = min(_POLL_MAX_S, pause * 2)

    # VeRL's base annotates a coroutine returning a Generator, while its own engines (nccl, hccl,
    # kimi, mooncake) are async generators, as this one is.
    async def receive_weights(  # type: ignore[override]
            self, global_steps: int | None = None) -> AsyncGenerator[tuple[str, Any], None]:
        """Waits for the generation of trainer step ``global_steps`` to commit; the replica's
        updater brings the instance to exactly that generation (nothing to do when it holds it
        already), the other workers wait for the instance to hold it; then yields the image's
        tensors, zero-copy views valid until the next update. A failed publish or update raises
        before anything is yielded: the rollout keeps its old weights."""
        if self.role not in ("updater", "reader") or self.loader is None:
            raise UsageError(f"receive_weights on a {self.role or 'not yet placed'} engine "
                             "(init_process_group gives the role)")
        if global_steps is None:
            raise UsageError("receive_weights needs global_steps: it loads that step's weights")
        step = int(global_steps)
        deadline = time.monotonic() + self.sync_timeout_s
        generation = self._committed_generation(step, deadline)
        if self.role == "updater":
            if not self._holds(generation):
                # VeRL aborted its replicas before this sync, and the generation was published
                # within it: there was nothing to fetch while they served. Fetch, then install,
                # all the same (the one-call update ends the same way): a transfer that fails
                # ends RESUMED_OLD (the compat image is apart from the rollout's weights) and the
                # next sync updates again without a rebuild.
                fetched = self.loader.fetch(generation, int(self.sync_timeout_s))
                self.loader.install(fetched.update_id, int(self.sync_timeout_s))
        else:
            self._await_instance_at(generation, step, deadline)
        self.generation = generation
        for item in self.loader.compat_tensors(self.worker_id, framework="torch").items():
            yield item

    def finalize(self) -> None:
        """Nothing to free: receive buffers stay registered for the next generation."""
