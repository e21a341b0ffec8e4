"""vLLM: a weight-transfer engine ``weight_relay`` in the shape of
``vllm.distributed.weight_transfer`` (vLLM 0.33.0), and the compat image as a model directory for
vLLM's ``disk`` backend.

Registered with ``WeightTransferEngineFactory.register_engine("weight_relay", __name__,
"WeightRelayTransferEngine")`` by :func:`register`, the ``vllm.general_plugins`` entry point of
this package. On each worker: ``init_transfer_engine`` registers the instance's workers with the
loader (rank 0) or attaches to it; per update, after vLLM drained: ``start_weight_update``,
``update_weights({"generation": G})`` (the loader updates every worker; only once it reports
UPDATED are the worker's compat tensors, views of the shared image, fed to ``model.load_weights``;
a failed update raises and the model keeps its old weights), ``finish_weight_update`` (the
trainer then passes ``weight_version=str(G)``, see :func:`sync`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from ..errors import UsageError
from ..loader import LoaderClient

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

BACKEND = "weight_relay"


@dataclass
class WeightRelayInitInfo:
    loader_url: str
    instance_id: str
    model: str
    group: str
    node: str
    worker_id: str
    token: str | None = None
    register: bool = False
    workers: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class WeightRelayUpdateInfo:
    generation: int | None = None
    timeout_s: int = 300


class WeightRelayTransferEngine(_Base):  # type: ignore[misc,valid-type]
    init_info_cls = WeightRelayInitInfo
    update_info_cls = WeightRelayUpdateInfo
    supports_draft_weight_update = False

    def __init__(self, config: Any, vllm_config: Any, device: Any, model: Any) -> None:
        super().__init__(config, vllm_config, device, model)
        self.loader: LoaderClient | None = None
        self.info: WeightRelayInitInfo | None = None
        self.generation: int | None = None
        self.weight_version: str | None = None
        self._updating = False

    def init_transfer_engine(self, init_info: Any) -> None:
        info = init_info if isinstance(init_info, WeightRelayInitInfo) else \
            self.parse_init_info(init_info)
        self.info = info
        self.loader = LoaderClient(info.loader_url, info.token)
        if info.register:
            self.loader.register(info.instance_id, info.model, info.group, info.node, info.workers)

    def start_weight_update(self) -> None:
        if self.loader is None:
            raise UsageError("init_transfer_engine was not called")
        self._updating = True

    def receive_weights(self, update_info: Any) -> None:
        if not self._updating:
            raise UsageError("receive_weights outside start/finish_weight_update")
        if self.loader is None or self.info is None:
            raise UsageError("init_transfer_engine was not called")
        progress = self.loader.update(update_info.generation, update_info.timeout_s)
        # Only now, with every worker UPDATED, does the model see the new bytes.
        tensors = self.loader.compat_tensors(self.info.worker_id, framework="torch")
        self.model.load_weights(weights=iter(tensors.items()))
        self.generation = progress.generation

    def finish_weight_update(self) -> None:
        self._updating = False
        if self.generation is not None:
            self.weight_version = str(self.generation)

    def shutdown(self) -> None:
        self.loader = None


def register() -> None:
    """The ``vllm.general_plugins`` entry point: registers the engine (lazily, by path)."""
    try:
        WeightTransferEngineFactory.register_engine(BACKEND, __name__, "WeightRelayTransferEngine")
    except ValueError:
        pass  # already registered in this process


def sync(client: Any, generation: int, timeout_s: int = 300) -> None:
    """Trainer side: drives an engine's control plane (a ``VLLMWeightSyncClient``: the four
    weight-sync methods) for a committed generation, with the generation as weight version."""
    client.start_weight_update()
    client.update_weights({"generation": int(generation), "timeout_s": timeout_s})
    client.finish_weight_update(weight_version=str(generation))
