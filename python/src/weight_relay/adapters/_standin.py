"""STAND-INS, used only where a framework does not import here (see python/README.md for why):
minimal classes with the interface of the pinned versions (VeRL 0.9.1
``verl.checkpoint_engine.base``, vLLM 0.33.0 ``vllm.distributed.weight_transfer``, SGLang 0.5.23
``WeightUpdater.update_weights_from_tensor``'s custom-loader dispatch), written from their
documented signatures, not copied. Every class here says ``STANDIN = True``."""

from __future__ import annotations

import importlib
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any, ClassVar


# ---- VeRL 0.9.1: verl.checkpoint_engine.base ------------------------------------------------
class CheckpointEngineRegistry:
    """Stand-in of verl's registry: ``register(backend)`` decorator, ``get``, ``new``."""

    STANDIN = True
    _registry: ClassVar[dict[str, type]] = {}

    @staticmethod
    def register(backend: str) -> Callable[[type], type]:
        def wrapper(cls: type) -> type:
            CheckpointEngineRegistry._registry[backend] = cls
            return cls

        return wrapper

    @classmethod
    def get(cls, backend: str) -> type:
        if backend not in cls._registry:
            raise ValueError(f"Checkpoint engine {backend} not registered, registered "
                             f"backends: {sorted(cls._registry)}")
        return cls._registry[backend]

    @classmethod
    def new(cls, backend: str, *args: Any, **kwargs: Any) -> Any:
        return cls.get(backend)(*args, **kwargs)


class CheckpointEngine(ABC):
    """Stand-in of verl's abstract CheckpointEngine (same abstract methods)."""

    STANDIN = True
    wire_format = "named_tensors"

    @abstractmethod
    def prepare(self) -> dict[str, Any]: ...

    @classmethod
    @abstractmethod
    def build_topology(cls, actor_wg_world_size: int, rollout_world_size: int,
                       metadata: list[dict[str, Any]]
                       ) -> tuple[dict[str, list[Any]], dict[str, list[Any]]]: ...

    @abstractmethod
    def init_process_group(self, **kwargs: Any) -> None: ...

    @abstractmethod
    def finalize(self) -> None: ...

    @abstractmethod
    async def send_weights(self, weights: Any, global_steps: int | None = None) -> None: ...

    @abstractmethod
    async def receive_weights(self, global_steps: int | None = None) -> Any: ...


def import_external_libs(external_libs: str | list[str] | None) -> None:
    """Stand-in of ``verl.utils.import_utils.import_external_libs`` (custom_backend_module)."""
    if not external_libs:
        return
    for lib in [external_libs] if isinstance(external_libs, str) else external_libs:
        importlib.import_module(lib)


# ---- vLLM 0.33.0: vllm.distributed.weight_transfer ------------------------------------------
class WeightTransferEngine(ABC):
    """Stand-in of vLLM's WeightTransferEngine: ``(config, vllm_config, device, model)``,
    ``parse_init_info``/``parse_update_info`` from the ``*_info_cls`` dataclasses, and
    ``update_weights`` = parse then ``receive_weights`` (no accelerator to synchronize here)."""

    STANDIN = True
    init_info_cls: type
    update_info_cls: type

    def __init__(self, config: Any, vllm_config: Any, device: Any, model: Any) -> None:
        self.config = config
        self.vllm_config = vllm_config
        self.parallel_config = getattr(vllm_config, "parallel_config", None)
        self.model_config = getattr(vllm_config, "model_config", None)
        self.device = device
        self.model = model

    def parse_init_info(self, init_dict: dict[str, Any]) -> Any:
        try:
            return self.init_info_cls(**init_dict)
        except TypeError as e:
            raise ValueError(f"Invalid init_info for {self.__class__.__name__}: {e}") from e

    def parse_update_info(self, update_dict: dict[str, Any]) -> Any:
        try:
            return self.update_info_cls(**update_dict)
        except TypeError as e:
            raise ValueError(f"Invalid update_info for {self.__class__.__name__}: {e}") from e

    @abstractmethod
    def init_transfer_engine(self, init_info: Any) -> None: ...

    @abstractmethod
    def start_weight_update(self) -> None: ...

    @abstractmethod
    def finish_weight_update(self) -> None: ...

    def update_weights(self, update_info: dict[str, Any]) -> None:
        self.receive_weights(self.parse_update_info(update_info))

    @abstractmethod
    def receive_weights(self, update_info: Any) -> None: ...

    @abstractmethod
    def shutdown(self) -> None: ...


class WeightTransferEngineFactory:
    """Stand-in of vLLM's factory: ``register_engine(name, module_path, class_name)`` (lazy) or
    ``register_engine(name, cls)``; ``create_engine(config, vllm_config, device, model)`` with
    ``config.backend`` naming the engine."""

    STANDIN = True
    _registry: ClassVar[dict[str, Callable[[], type]]] = {}

    @classmethod
    def register_engine(cls, name: str, module_path_or_cls: Any,
                        class_name: str | None = None) -> None:
        if name in cls._registry:
            raise ValueError(f"Weight transfer engine '{name}' is already registered.")
        if isinstance(module_path_or_cls, str):
            if class_name is None:
                raise ValueError("class_name is required when registering with module path")
            path = module_path_or_cls
            cls._registry[name] = lambda: getattr(importlib.import_module(path), class_name)
        else:
            cls._registry[name] = lambda: module_path_or_cls

    @classmethod
    def create_engine(cls, config: Any, vllm_config: Any, device: Any, model: Any) -> Any:
        if config.backend not in cls._registry:
            raise ValueError(f"Invalid weight transfer backend: {config.backend}. "
                             f"Available engines: {list(cls._registry)}")
        return cls._registry[config.backend]()(config, vllm_config, device, model)


# ---- SGLang 0.5.23: WeightUpdater.update_weights_from_tensor's dispatch ---------------------
def sglang_update_weights_from_tensor(model: Any, named_tensors: list[Any], load_format: str | None,
                                      custom_weight_loaders: list[str]) -> tuple[bool, str]:
    """Stand-in of SGLang's dispatch: a ``load_format`` listed in ``--custom-weight-loader`` is
    imported by path and called as ``loader(model, named_tensors)``; None means
    ``model.load_weights(named_tensors)``."""
    if load_format in custom_weight_loaders:
        module, _, func = load_format.rpartition(".")
        getattr(importlib.import_module(module), func)(model, named_tensors)
    elif load_format is None:
        model.load_weights(named_tensors)
    else:
        raise NotImplementedError(f"Unknown load_format={load_format}")
    return True, "Success"
