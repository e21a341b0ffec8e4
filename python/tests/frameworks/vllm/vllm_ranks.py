"""The workers of one vLLM instance with TP ranks as forked processes (``Proc`` of
``verl_cluster``: one process per rank, calls answered by Futures), driven as vLLM's executor
drives them: :func:`collective_rpc` calls the same method with the same arguments on every rank at
once and waits for all.

Each rank is vLLM's real ``vllm.v1.worker.gpu_worker.Worker`` (``VLLM_USE_V2_MODEL_RUNNER=0``:
model runner V2 needs Triton). What vLLM's ``Worker.init_device`` / ``load_model`` do on a GPU is
done here the CPU way, with vLLM's own functions:

- the distributed environment: ``init_distributed_environment`` and
  ``initialize_model_parallel`` over gloo (as ``init_worker_distributed_environment`` does, minus
  the CUDA device);
- the model: vLLM's ``initialize_model`` (which records the metadata layerwise reload needs),
  the first load through the model's ``load_weights`` and vLLM's
  ``process_weights_after_loading``; the model runner (``GPUModelRunner`` needs CUDA) is
  :class:`CpuModelRunner`, which holds the model and answers the three calls the Worker's
  weight-update methods make (``get_model``, ``get_draft_model``, ``reset_lora_state``);
- the engine: ``WeightTransferEngineFactory.create_engine(vllm_config.weight_transfer_config,
  ...)`` exactly as ``Worker.load_model`` calls it (the rest of ``load_model`` needs a device
  memory pool), after vLLM's plugin loader (``load_general_plugins``) ran this package's
  ``vllm.general_plugins`` entry point from its installed metadata.

ONE stub: vLLM's ``WeightTransferEngine.update_weights`` ends with
``torch.accelerator.synchronize()``, which raises "Found no NVIDIA driver" on this machine; in
the rank processes it is replaced by a no-op (there is no device stream to wait for)."""

from __future__ import annotations

import os
import sys
from concurrent.futures import Future
from types import SimpleNamespace
from typing import Any

import torch

from verl_cluster import Proc, WorkerError, free_port

TIMEOUT_S = 300


class CpuModelRunner:
    """Holds the model for the Worker (what ``GPUModelRunner`` does for a GPU)."""

    def __init__(self, model: torch.nn.Module) -> None:
        self.model = model

    def get_model(self) -> torch.nn.Module:
        return self.model

    def get_draft_model(self) -> None:
        return None

    def reset_lora_state(self) -> None:
        pass


def model_config() -> Any:
    """The three ``ModelConfig`` fields vLLM's ``process_weights_after_loading`` reads for a model
    without tied embeddings, attention layers or torchao (a real ``ModelConfig`` needs a
    Hugging Face model directory and the model registry's probe)."""
    return SimpleNamespace(word_embeddings_untied_by_checkpoint=False, quantization=None,
                           dtype=torch.bfloat16)


class Rank:
    """One worker of the instance, built inside its process."""

    def __init__(self, tp: int, pp: int, rank: int, init_method: str, plugin_site: str,
                 quantized: bool, seed: int) -> None:
        os.environ["VLLM_USE_V2_MODEL_RUNNER"] = "0"
        torch.accelerator.synchronize = lambda *a, **k: None  # the ONE stub (module docstring)
        sys.path.append(plugin_site)  # this package's dist-info (entry points); code from src
        from tiny_llama import PerTensorFp8, TinyLlamaForCausalLM, checkpoint
        from vllm.config import (
            CompilationConfig,
            CompilationMode,
            DeviceConfig,
            ParallelConfig,
            VllmConfig,
            set_current_vllm_config,
        )
        from vllm.config.weight_transfer import WeightTransferConfig
        from vllm.distributed.parallel_state import (
            init_distributed_environment,
            initialize_model_parallel,
        )
        from vllm.distributed.weight_transfer.factory import WeightTransferEngineFactory
        from vllm.model_executor.model_loader.utils import (
            initialize_model,
            process_weights_after_loading,
        )
        from vllm.plugins import load_general_plugins
        from vllm.v1.worker.gpu_worker import Worker

        load_general_plugins()
        cfg = VllmConfig(device_config=DeviceConfig(device="cpu"),
                         compilation_config=CompilationConfig(mode=CompilationMode.NONE),
                         parallel_config=ParallelConfig(tensor_parallel_size=tp,
                                                        pipeline_parallel_size=pp),
                         weight_transfer_config=WeightTransferConfig(backend="weight_relay"),
                         quant_config=PerTensorFp8() if quantized else None)
        self.worker = Worker(cfg, local_rank=rank, rank=rank, distributed_init_method=init_method,
                             is_driver_worker=rank == 0)
        device = torch.device("cpu")
        with set_current_vllm_config(cfg):
            init_distributed_environment(tp * pp, rank, init_method, rank, backend="gloo")
            initialize_model_parallel(tp, pp, backend="gloo")
            model = initialize_model(cfg, model_class=TinyLlamaForCausalLM)
            model.load_weights(checkpoint(seed).items())
            process_weights_after_loading(model, model_config(), device)
        self.model = model
        self.worker.model_runner = CpuModelRunner(model)
        self.worker.device = device
        self.worker.weight_transfer_engine = WeightTransferEngineFactory.create_engine(
            cfg.weight_transfer_config, cfg, device, model)

    def engine_class(self) -> tuple[str, str, list[str]]:
        e = self.worker.weight_transfer_engine
        return (type(e).__module__, type(e).__name__,
                [f"{c.__module__}.{c.__qualname__}" for c in type(e).__mro__])

    def held(self) -> dict[str, tuple[str, tuple[int, ...], bytes]]:
        """Every parameter the rank holds: dtype, shape and its bytes (row-major)."""
        return {n: (str(p.dtype), tuple(p.shape), bits(p))
                for n, p in self.model.named_parameters()}

    def pointers(self) -> dict[str, int]:
        return {n: p.data_ptr() for n, p in self.model.named_parameters()}

    def on_meta(self) -> list[str]:
        return [n for n, p in self.model.named_parameters() if p.device.type == "meta"]

    def engine(self, attr: str) -> Any:
        return getattr(self.worker.weight_transfer_engine, attr)


def bits(t: torch.Tensor) -> bytes:
    c = t.detach().contiguous()
    return bytes(c.view(torch.uint8).numpy().tobytes()) if c.numel() else b""


class Instance:
    """``tp * pp`` ranks of one vLLM instance, each a forked process (rank ``r`` is TP rank
    ``r % tp`` of PP stage ``r // tp``, vLLM's layout). Every PP stage holds the whole tiny model:
    what is tested is who updates and what each rank loads, not the split of layers."""

    def __init__(self, tp: int, plugin_site: str, *, pp: int = 1, quantized: bool = False,
                 seed: int = 0) -> None:
        init = f"tcp://127.0.0.1:{free_port()}"
        self.procs = [Proc(f"vllm-rank{r}", {}, lambda r=r: Rank(tp, pp, r, init, plugin_site,
                                                                  quantized, seed))
                      for r in range(tp * pp)]
        try:
            for p in self.procs:
                p.ready.result(TIMEOUT_S)
        except BaseException:
            self.stop()
            raise

    def collective_rpc(self, method: str, *args: Any) -> list[Any]:
        """vLLM's executor: the same call on every rank at once; raises the first failure after
        all answered (:class:`WorkerError` carrying the rank's traceback)."""
        futures: list[Future[Any]] = [p.call(method, *args) for p in self.procs]
        errors = [f.exception(TIMEOUT_S) for f in futures]
        for e in errors:
            if e is not None:
                raise e
        return [f.result() for f in futures]

    def outcomes(self, method: str, *args: Any) -> list[BaseException | Any]:
        """Like :meth:`collective_rpc`, but every rank's result or error."""
        futures = [p.call(method, *args) for p in self.procs]
        return [f.exception(TIMEOUT_S) or f.result() for f in futures]

    def stop(self) -> None:
        for p in self.procs:
            p.stop()


__all__ = ["Instance", "WorkerError", "bits"]
