"""vLLM: a weight-transfer engine ``weight_relay`` in the shape of
``vllm.distributed.weight_transfer`` (vLLM 0.33.0), and the compat image as a model directory for
vLLM's ``disk`` backend.

Registered with ``WeightTransferEngineFactory.register_engine("weight_relay", __name__,
"WeightRelayTransferEngine")`` by :func:`register`, the ``vllm.general_plugins`` entry point of
this package, so ``LLM(..., weight_transfer_config={"backend": "weight_relay"})`` builds one
engine per worker (each TP / PP rank of the instance) in ``Worker.load_model``.

vLLM hands every worker of the instance the same ``init_info`` and the same ``update_info``
(``collective_rpc``), and calls each worker's ``start_weight_update``, ``update_weights`` and
``finish_weight_update`` at the same time. So one rank drives the instance, the others follow:

- ``init_transfer_engine``: the driving rank (rank 0 of its PP, PCP and TP groups) registers the
  instance with its loader (``register``, default true: ``workers`` as given, else one compat
  worker ``{instance_id}-vllm`` sized from ``manifest``) and tells the other ranks the outcome
  over vLLM's own groups (``broadcast_object`` along PP, then PCP, then TP); every rank opens
  its own :class:`LoaderClient` to the same loader.
- ``update_weights`` -> ``receive_weights``: the driving rank runs the loader's update (one per
  instance, so no rank is refused with 409 ``update-running``), or, when the update info carries
  the ``update_id`` of an update the trainer fetched while vLLM served (:func:`sync` with
  ``loader``), only installs it; it passes the outcome on; then
  every rank takes the compat image's tensors (views of the shared image, no copy) and feeds
  them to ``model.load_weights``, whose weight loaders cut the rank's own shard (as from a
  checkpoint: that is where bytes are copied, into the parameters).
- The weights arrive in checkpoint format, so they go through vLLM's layerwise reload (what its
  checkpoint-format engines do): ``initialize_layerwise_reload`` before ``load_weights``,
  ``finalize_layerwise_reload`` in ``finish_weight_update``. A quantized layer (FP8) is thereby
  re-processed into its kernel format and copied into its original storage (CUDA-graph
  pointers kept), instead of having checkpoint bytes loaded into kernel-format parameters.
  The reload starts only once the loader's update is UPDATED, so a failed transfer never puts
  the model's parameters on the meta device.
- A failed update raises on every rank (the driving rank the loader's error, the others
  :class:`InstanceUpdateFailedError` naming it). vLLM's ``Worker`` then ends the session itself
  (it refuses ``finish_weight_update`` after a raising ``update_weights``): the next update starts
  with ``start_weight_update``. A failed loader update leaves the model untouched (RESUMED_OLD:
  the old weights serve on). A ``load_weights`` that raises part-way (a model that does not
  match the manifest) aborts the layerwise reload: layers not yet processed get their old
  tensors back, layers already processed keep the new generation's values, and the error says
  so (:class:`InstanceUpdateFailedError`); the next update reloads every layer.

The trainer then passes ``weight_version=str(G)`` (see :func:`sync`). All ranks of an instance run
on the loader's node (they read the image from its shared memory).
"""

from __future__ import annotations

import json
import logging
import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from ..errors import ConflictError, RelayError, UsageError
from ..loader import LoaderClient, compat_worker
from ..manifest import Manifest

_log = logging.getLogger(__name__)

try:  # the real classes when vLLM imports here
    from vllm.distributed.weight_transfer.base import WeightTransferEngine as _Base
    from vllm.distributed.weight_transfer.factory import WeightTransferEngineFactory

    STANDIN = False
except ImportError as _missing:  # only a missing vLLM: a broken install raises, never hides
    from ._standin import WeightTransferEngine as _Base  # type: ignore[assignment]
    from ._standin import WeightTransferEngineFactory  # type: ignore[assignment]

    STANDIN = True
    _log.warning("vLLM does not import here (%s): weight_relay.adapters.vllm uses the stand-in "
                 "of vLLM 0.33.0's weight-transfer interface (STANDIN = True)", _missing)
else:
    _log.info("weight_relay.adapters.vllm uses vLLM's own WeightTransferEngine (STANDIN = False)")

BACKEND = "weight_relay"
NODE_ENV = "WEIGHT_RELAY_NODE"


class InstanceUpdateFailedError(RelayError):
    """The instance's registration or update failed: on a rank other than the driving one, the
    driving rank's error (``cause``); on any rank, a ``load_weights`` that raised part-way
    (``cause``: vLLM's error)."""

    def __init__(self, message: str, cause: str) -> None:
        super().__init__(message)
        self.cause = cause


@dataclass
class WeightRelayInitInfo:
    """The one init info every worker of the instance receives."""

    loader_url: str
    instance_id: str
    model: str
    group: str
    node: str | None = None  # default $WEIGHT_RELAY_NODE, else the host name
    token: str | None = None
    register: bool = True  # the driving rank registers the instance (False: someone else did)
    manifest: Any = None  # a Manifest, its JSON dict or a path: sizes the default compat worker
    workers: list[dict[str, Any]] = field(default_factory=list)
    worker_id: str | None = None  # the compat worker whose image every rank reads


@dataclass
class WeightRelayUpdateInfo:
    generation: int | None = None  # None: the active generation
    timeout_s: int = 300
    # An update the trainer already fetched while vLLM served (``LoaderClient.fetch``, see
    # :func:`sync`): the driving rank only installs it. None: the whole update runs here.
    update_id: str | None = None


def _manifest(m: Any) -> Manifest:
    if isinstance(m, Manifest):
        return m
    if isinstance(m, str):  # a path to the manifest's JSON
        with open(m, encoding="utf-8") as fh:
            m = json.load(fh)
    return Manifest.from_json(m)


class _Ranks:
    """The instance's ranks as vLLM groups them (PP x PCP x TP, vLLM's ``initialize_model_parallel``
    order): the rank that is 0 in every group drives, :meth:`share` passes its value to every
    rank over vLLM's own groups (one rank when they are not up)."""

    def __init__(self) -> None:
        self.groups: list[tuple[str, Any]] = []  # outermost first
        try:
            from vllm.distributed import parallel_state as ps

            if ps.model_parallel_is_initialized():
                self.groups = [("pp", ps.get_pp_group())]
                if hasattr(ps, "get_pcp_group"):
                    self.groups.append(("pcp", ps.get_pcp_group()))
                self.groups.append(("tp", ps.get_tp_group()))
        except ImportError:
            pass
        self.size = 1
        for _, g in self.groups:
            self.size *= g.world_size

    @property
    def driver(self) -> bool:
        return all(g.rank_in_group == 0 for _, g in self.groups)

    @property
    def name(self) -> str:
        return "/".join(f"{n}{g.rank_in_group}" for n, g in self.groups if g.world_size > 1) \
            or "0"

    def share(self, value: Any) -> Any:
        """Rank 0 of the outermost group to rank 0 of each of its members' inner groups, and so
        on inwards: every rank ends with the driver's value (a collective: every rank calls)."""
        for i, (_, g) in enumerate(self.groups):
            if all(h.rank_in_group == 0 for _, h in self.groups[i + 1:]):
                value = g.broadcast_object(value, src=0)
        return value


def _failure(e: BaseException) -> str:
    return f"{type(e).__name__}: {e}"


class WeightRelayTransferEngine(_Base):  # type: ignore[misc,valid-type]
    init_info_cls = WeightRelayInitInfo
    update_info_cls = WeightRelayUpdateInfo
    supports_draft_weight_update = False

    def __init__(self, config: Any, vllm_config: Any, device: Any, model: Any) -> None:
        super().__init__(config, vllm_config, device, model)
        self.loader: LoaderClient | None = None
        self.info: WeightRelayInitInfo | None = None
        self.ranks: _Ranks | None = None
        self.worker_id: str | None = None
        self.generation: int | None = None
        self.weight_version: str | None = None
        self._received: int | None = None
        self._reloading = False

    # ---- init --------------------------------------------------------------------------------
    def init_transfer_engine(self, init_info: Any) -> None:
        info = init_info if isinstance(init_info, WeightRelayInitInfo) else \
            self.parse_init_info(init_info)
        ranks = _Ranks()
        instance = info.instance_id
        pc = getattr(self, "parallel_config", None)
        if int(getattr(pc, "data_parallel_size", 1) or 1) > 1:  # each DP replica: an instance
            instance = f"{instance}-dp{int(getattr(pc, 'data_parallel_index', 0))}"
        workers = list(info.workers)
        node = info.node or os.environ.get(NODE_ENV) or socket.gethostname()
        outcome: tuple[str | None, str | None] = (None, None)
        if ranks.driver:
            try:
                if not workers:
                    if info.manifest is None:
                        raise UsageError("weight_relay init_info needs workers or a manifest")
                    workers = [compat_worker(f"{instance}-vllm", node, f"{instance}-vllm",
                                             _manifest(info.manifest))]
                worker_id = info.worker_id or next(
                    (w["workerId"] for w in workers if w.get("mode") == "compat"), None)
                if worker_id is None and info.register:
                    raise UsageError(f"instance {instance}: no compat worker among "
                                     f"{[w.get('workerId') for w in workers]}")
                if info.register:
                    with LoaderClient(info.loader_url, info.token) as lc:
                        lc.register(instance, info.model, info.group, node, workers)
                outcome = (worker_id, None)
            except Exception as e:
                outcome = (None, _failure(e))
                ranks.share(outcome)
                raise
        worker_id, error = ranks.share(outcome)
        if error is not None:
            raise InstanceUpdateFailedError(
                f"instance {instance}: the driving rank could not register it: {error}", error)
        if self.loader is not None:  # initialized again (another model, another loader)
            self.loader.close()
        self.info, self.ranks = info, ranks
        self.worker_id = worker_id or info.worker_id
        self.loader = LoaderClient(info.loader_url, info.token)
        _log.info("weight_relay engine of instance %s, rank %s of %d (%s), reads worker %s",
                  instance, ranks.name, ranks.size,
                  "drives the updates" if ranks.driver else "follows the driving rank",
                  self.worker_id)

    # ---- one update ----------------------------------------------------------------------------
    def start_weight_update(self) -> None:
        if self.loader is None or self.ranks is None:
            raise UsageError("init_transfer_engine was not called")
        self._received = None

    def receive_weights(self, update_info: Any) -> None:
        if self.loader is None or self.ranks is None:
            raise UsageError("init_transfer_engine was not called")
        ranks = self.ranks
        outcome: tuple[int | None, str | None] = (None, None)
        if ranks.driver:
            try:
                if update_info.update_id is not None:  # fetched while serving: install it now
                    progress = self.loader.install(update_info.update_id, update_info.timeout_s)
                else:
                    progress = self.loader.update(update_info.generation, update_info.timeout_s)
                outcome = (progress.generation, None)
            except Exception as e:
                ranks.share((None, _failure(e)))
                raise  # the loader's own error; the model was not touched
        generation, error = ranks.share(outcome)
        if error is not None:
            raise InstanceUpdateFailedError(
                f"the update of the instance failed on the driving rank (this is rank "
                f"{ranks.name}; its weights are untouched): {error}", error)
        # Every rank: the image holds generation G; load this rank's shards from it.
        tensors = self.loader.compat_tensors(self.worker_id, framework="torch")
        self._begin_reload()
        try:
            with _partial_load_allowed():  # as vLLM's own checkpoint-format engines load
                self.model.load_weights(weights=iter(tensors.items()))
        except Exception as e:
            self._abort_reload()
            raise InstanceUpdateFailedError(
                f"rank {ranks.name}: load_weights of generation {generation} failed part-way; "
                "layers not yet processed keep their old weights, processed layers hold the new "
                f"ones: update again: {_failure(e)}", _failure(e)) from e
        self._received = generation

    def finish_weight_update(self) -> None:
        if self._reloading:
            self._finish_reload()
        if self._received is not None:
            self.generation = self._received
            self.weight_version = str(self._received)
        self._received = None

    def shutdown(self) -> None:
        if self.loader is not None:
            self.loader.close()
        self.loader = None

    # ---- vLLM's layerwise reload -------------------------------------------------------------
    def _begin_reload(self) -> None:
        if STANDIN or self._reloading:
            return
        from vllm.model_executor.model_loader.reload import initialize_layerwise_reload

        initialize_layerwise_reload(self.model)
        self._reloading = True

    def _finish_reload(self) -> None:
        from vllm.model_executor.model_loader.reload import finalize_layerwise_reload

        self._reloading = False
        finalize_layerwise_reload(self.model, self.model_config)

    def _abort_reload(self) -> None:
        """Undo ``initialize_layerwise_reload`` for the layers not processed yet: their kernel
        tensors (the old weights, in their original storage) go back and their loaders are
        unwrapped, so the next update starts from a model vLLM can reload again."""
        if not self._reloading:
            return
        self._reloading = False
        from vllm.model_executor.model_loader.reload import layerwise as lw

        model = self.model
        if hasattr(model, "_original_do_torchao_reload"):
            model._do_torchao_reload = model._original_do_torchao_reload
        for layer in model.modules():
            info = lw.LAYERWISE_INFO.get(layer)
            if info is None or not info.can_load():
                continue
            if info.kernel_tensors is not None:
                lw._place_kernel_tensors(layer, info)
            for t in list(layer.parameters(recurse=False)) + list(layer.buffers(recurse=False)):
                if hasattr(t, "weight_loader"):
                    t.weight_loader = lw._get_original_loader(t)
            info.reset()
        lw.LOADING_LAYERS.clear()


@contextmanager
def _partial_load_allowed() -> Iterator[None]:
    """vLLM's ``disable_mtp_completeness_check`` (its NCCL and IPC engines wrap ``load_weights``
    in it: an update need not carry a speculative MTP head); nothing with the stand-in."""
    if STANDIN:
        yield
        return
    from vllm.model_executor.model_loader.mtp_validation import disable_mtp_completeness_check

    with disable_mtp_completeness_check():
        yield


def register() -> None:
    """The ``vllm.general_plugins`` entry point: registers the engine (lazily, by path)."""
    try:
        WeightTransferEngineFactory.register_engine(BACKEND, __name__, "WeightRelayTransferEngine")
    except ValueError:
        pass  # already registered in this process


def sync(client: Any, generation: int, timeout_s: int = 300,
         loader: LoaderClient | None = None) -> None:
    """Trainer side: drives an engine's control plane (a ``VLLMWeightSyncClient``: the four
    weight-sync methods) for a committed generation, with the generation as weight version.

    With ``loader`` (a client of the instance's loader) the transfer runs before vLLM is asked
    anything: ``loader.fetch`` while vLLM serves (its workers run the weight-sync calls inside the
    engine's busy loop, so every one of them is time vLLM does not generate), then
    ``update_weights`` only installs the fetched update and loads it. A fetch that fails raises
    :class:`~weight_relay.errors.UpdateFailedError` (``RESUMED_OLD``) before any weight-sync call:
    vLLM never paused and serves its old weights. When vLLM fails after the fetch but before its
    driving rank asked to install, the fetched update is declined (``loader.decline``: it ends
    ``RESUMED_OLD`` at once rather than holding the group until its deadline) and vLLM's error is
    raised. Without ``loader`` the whole update runs inside ``update_weights``."""
    info: dict[str, Any] = {"generation": int(generation), "timeout_s": timeout_s}
    if loader is None:
        client.start_weight_update()
        client.update_weights(info)
        client.finish_weight_update(weight_version=str(generation))
        return
    update_id = info["update_id"] = loader.fetch(int(generation), timeout_s).update_id
    try:
        client.start_weight_update()
        client.update_weights(info)
    except BaseException as e:
        # vLLM failed before its driving rank asked to install: decline the fetched update so
        # the group ends now, not at its deadline (refused, 409, once the install was asked for:
        # then the loader's own outcome stands).
        try:
            loader.decline(update_id, f"vLLM failed before the install: {e!r}")
        except ConflictError:
            pass
        except Exception as d:
            _log.warning("declining update %s failed (it ends at its deadline): %s", update_id, d)
        raise
    client.finish_weight_update(weight_version=str(generation))


__all__ = ["BACKEND", "STANDIN", "InstanceUpdateFailedError",
           "WeightRelayInitInfo", "WeightRelayTransferEngine", "WeightRelayUpdateInfo",
           "register", "sync"]
