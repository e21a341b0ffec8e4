"""A TP-N SGLang instance on CPU made of SGLang's own classes, one forked process per TP rank.

Each rank process does what SGLang's scheduler process does before it serves, minus the KV cache
and the attention backends: publishes the ``ServerArgs`` (``runtime_context.publish``), joins the
gloo world and SGLang's model-parallel groups (``init_distributed_environment``,
``initialize_model_parallel``, ``initialize_dp_attention``), builds the real model class
(``Qwen2ForCausalLM`` / ``LlamaForCausalLM``) with SGLang's ``DefaultModelLoader.load_model`` from a
Hugging Face directory made locally, and wires the real ``WeightUpdater`` (model runner) and
``SchedulerWeightUpdaterManager`` (scheduler) as ``ModelRunner`` and ``Scheduler`` do. Requests
reach the manager through SGLang's own ``TypeBasedDispatcher`` with the scheduler's mapping for
the weight-update requests; an exception escaping a request ends the rank process, as
``run_scheduler_process`` ends the server (``SchedulerDied`` in the driver).

:class:`EngineFront` is the driver's side: the methods of ``sglang.Engine`` the adapter calls,
building the same ``io_struct`` requests (``update_weights_from_tensor`` serializes with the
Engine's own ``_serialize_tensors_per_rank``: one identical payload per rank) and handing each
to every rank, as the scheduler broadcasts a request to its TP ranks; it answers rank 0's
``(success, message)``.

Two CPU shims, both outside weight loading: SGLang's GroupCoordinator would open a PyNccl
communicator (CUDA only), so ``init_model_parallel_group`` is called with ``use_pynccl=False``;
``RotaryEmbedding`` would import vLLM's CUDA kernel unless SGLang's CPU engine flag is on (whose
other kernels, ``sgl_kernel``, are not on PyPI), so ``rotary_embedding.base._is_cpu`` is set."""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import socket
import traceback
from typing import Any

import torch
from safetensors.torch import save_file

_FORK = mp.get_context("fork")


class SchedulerDied(RuntimeError):
    """A rank process ended while handling a request (SGLang's server would be gone)."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def config(family: str) -> dict[str, Any]:
    """Tiny configs: Qwen2 with q/k/v biases and untied head, kv heads split over TP 2; Llama with
    tied embeddings and one kv head, replicated over TP 2; vocabularies that need padding."""
    base = dict(hidden_size=64, intermediate_size=96, num_attention_heads=4, num_hidden_layers=2,
                max_position_embeddings=128, rms_norm_eps=1e-6, rope_theta=10000.0,
                torch_dtype="bfloat16", hidden_act="silu")
    if family == "qwen2":
        return dict(base, architectures=["Qwen2ForCausalLM"], model_type="qwen2",
                    num_key_value_heads=2, vocab_size=300, tie_word_embeddings=False)
    return dict(base, architectures=["LlamaForCausalLM"], model_type="llama",
                num_key_value_heads=1, vocab_size=250, tie_word_embeddings=True)


def checkpoint(cfg: dict[str, Any], seed: int) -> dict[str, torch.Tensor]:
    """Random fp32 trainer weights named as in the Hugging Face checkpoint (served as bf16)."""
    g = torch.Generator().manual_seed(seed)
    h, i, v = cfg["hidden_size"], cfg["intermediate_size"], cfg["vocab_size"]
    hd = h // cfg["num_attention_heads"]
    q, kv = cfg["num_attention_heads"] * hd, cfg["num_key_value_heads"] * hd
    shapes: dict[str, tuple[int, ...]] = {"model.embed_tokens.weight": (v, h),
                                          "model.norm.weight": (h,)}
    if not cfg["tie_word_embeddings"]:
        shapes["lm_head.weight"] = (v, h)
    for layer in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{layer}."
        a = p + "self_attn."
        shapes.update({a + "q_proj.weight": (q, h), a + "k_proj.weight": (kv, h),
                       a + "v_proj.weight": (kv, h), a + "o_proj.weight": (h, q),
                       p + "mlp.gate_proj.weight": (i, h), p + "mlp.up_proj.weight": (i, h),
                       p + "mlp.down_proj.weight": (h, i), p + "input_layernorm.weight": (h,),
                       p + "post_attention_layernorm.weight": (h,)})
        if cfg["model_type"] == "qwen2":
            shapes.update({p + "self_attn.q_proj.bias": (q,), p + "self_attn.k_proj.bias": (kv,),
                           p + "self_attn.v_proj.bias": (kv,)})
    return {n: torch.randn(s, generator=g) for n, s in shapes.items()}


def write_model(directory: str, cfg: dict[str, Any], weights: dict[str, torch.Tensor]) -> str:
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, "config.json"), "w", encoding="utf-8") as fh:
        json.dump(cfg, fh)
    save_file({k: v.to(torch.bfloat16).contiguous() for k, v in weights.items()},
              os.path.join(directory, "model.safetensors"))
    return directory


class _Rank:
    """Inside a rank process: the model and SGLang's weight-update classes."""

    def __init__(self, rank: int, tp: int, port: int, model_dir: str,
                 custom_loaders: list[str]) -> None:
        import sglang.srt.distributed.parallel_state as ps
        import sglang.srt.layers.rotary_embedding.base as rope
        from sglang.srt.configs.model_config import ModelConfig
        from sglang.srt.layers.dp_attention import init_dp_gathered_buffer, initialize_dp_attention
        from sglang.srt.layers.moe import initialize_moe_config
        from sglang.srt.managers.io_struct import (
            BeginWeightUpdateReqInput,
            EndWeightUpdateReqInput,
            UpdateWeightFromDiskReqInput,
            UpdateWeightsFromTensorReqInput,
        )
        from sglang.srt.managers.scheduler_components.weight_updater import (
            SchedulerWeightUpdaterManager,
        )
        from sglang.srt.managers.tp_worker import TpModelWorker
        from sglang.srt.model_executor.model_runner_components.weight_updater import WeightUpdater
        from sglang.srt.runtime_context import SpawnRanks, publish, spawn_world_rank
        from sglang.srt.server_args import ServerArgs
        from sglang.utils import TypeBasedDispatcher

        rope._is_cpu = True  # shim: see the module
        make_group = ps.init_model_parallel_group

        def no_pynccl(*args: Any, **kwargs: Any) -> Any:
            kwargs["use_pynccl"] = False
            return make_group(*args, **kwargs)

        ps.init_model_parallel_group = no_pynccl  # shim: see the module
        self.rank, self.tp, self.model_dir = rank, tp, model_dir
        self.server_args = ServerArgs(model_path=model_dir, device="cpu", tp_size=tp,
                                      dtype="bfloat16", custom_weight_loader=custom_loaders)
        publish(self.server_args, role="scheduler", ranks=SpawnRanks(
            world_rank=spawn_world_rank(self.server_args, tp_rank=rank, pp_rank=0), gpu_id=0))
        initialize_moe_config()
        self.model_config = ModelConfig(model_path=model_dir, dtype="bfloat16")
        ps.init_distributed_environment(world_size=tp, rank=rank, local_rank=0, backend="gloo",
                                        distributed_init_method=f"tcp://127.0.0.1:{port}")
        ps.initialize_model_parallel()
        initialize_dp_attention(self.server_args)
        init_dp_gathered_buffer(self.model_config)
        self.model = self._load(model_dir)
        model = self.model
        self.weight_updater = WeightUpdater(  # as ModelRunner builds it
            tp_rank=rank, device="cpu", gpu_id=0, model_config=self.model_config,
            custom_weight_loaders=custom_loaders, get_model=lambda: model,
            update_model_fields=lambda *a, **k: None, recapture_cuda_graph=lambda: None,
            get_model_runner=lambda: None)
        runner = type("Runner", (), {})()
        runner.weight_updater = self.weight_updater
        runner.model = model
        tp_worker = type("TpWorker", (), {})()
        tp_worker.model_runner = runner
        tp_worker.weight_update_runners = lambda: [("target", runner)]
        tp_worker.deserialize_own_rank = (
            lambda payload: TpModelWorker.deserialize_own_rank(tp_worker, payload))
        self.versions: list[str | None] = []
        scheduler = type("Scheduler", (), {})()
        scheduler.record_weight_version_change = lambda new_version: self.versions.append(
            new_version)
        self.manager = SchedulerWeightUpdaterManager(
            tp_worker=tp_worker, draft_worker=None, memory_saver_adapter=None,
            flush_cache=lambda **kwargs: True, is_fully_idle=lambda **kwargs: True,
            scheduler=scheduler)
        self.dispatcher = TypeBasedDispatcher([  # Scheduler.init_request_dispatcher's entries
            (BeginWeightUpdateReqInput, self.manager.begin_weight_update),
            (EndWeightUpdateReqInput, self.manager.end_weight_update),
            (UpdateWeightsFromTensorReqInput, self.manager.update_weights_from_tensor),
            (UpdateWeightFromDiskReqInput, self.manager.update_weights_from_disk),
        ])

    def _load(self, model_dir: str) -> Any:
        from sglang.srt.configs.device_config import DeviceConfig
        from sglang.srt.configs.load_config import LoadConfig
        from sglang.srt.configs.model_config import ModelConfig
        from sglang.srt.model_loader.loader import get_model_loader

        mc = ModelConfig(model_path=model_dir, dtype="bfloat16")
        loader = get_model_loader(LoadConfig(load_format="auto", tp_rank=self.rank), mc)
        return loader.load_model(model_config=mc, device_config=DeviceConfig("cpu", 0))

    def request(self, req: Any) -> Any:
        out = self.dispatcher(req)
        return (out.success, out.message)

    def params(self) -> dict[str, Any]:
        """Every parameter's raw bits as numpy (SGLang patches torch's tensor pickling)."""
        return _bits(self.model)

    def reference(self, model_dir: str) -> dict[str, torch.Tensor]:
        """The same model class loaded by SGLang's DefaultModelLoader from ``model_dir``: what
        this rank must hold once those weights are in place."""
        return _bits(self._load(model_dir))

    def weights_by_name(self, name: str, truncate: int) -> Any:
        """SGLang's own ``get_weights_by_name`` of the model class (what ``Engine`` answers from
        rank 0; every rank must call it: it gathers o_proj/down_proj over the TP group)."""
        return self.model.get_weights_by_name(name, truncate, tp_size=self.tp)

    def break_param(self, name: str) -> None:
        """Gives this rank's parameter ``name`` one more row (a rank whose model differs)."""
        module_name, _, attr = name.rpartition(".")
        module = self.model.get_submodule(module_name)
        old = getattr(module, attr)
        setattr(module, attr, torch.nn.Parameter(
            torch.zeros((old.shape[0] + 1, *old.shape[1:]), dtype=old.dtype),
            requires_grad=False))


def _bits(model: Any) -> dict[str, Any]:
    width = {1: torch.int8, 2: torch.int16, 4: torch.int32, 8: torch.int64}
    return {n: p.detach().contiguous().view(width[p.element_size()]).numpy().copy()
            for n, p in model.named_parameters()}


def _serve(conn: Any, args: tuple[Any, ...]) -> None:
    torch.set_num_threads(1)  # forked: keep out of the parent's OpenMP pool
    try:
        rank = _Rank(*args)
        conn.send((True, None))
    except BaseException as e:
        conn.send((False, f"{type(e).__name__}: {e}\n{traceback.format_exc()}"))
        return
    while True:
        msg = conn.recv()
        if msg is None:
            return
        method, margs = msg
        if method == "request":  # the scheduler's event loop: an exception ends the process
            try:
                result = rank.request(*margs)
            except BaseException:
                traceback.print_exc()
                os._exit(17)
            conn.send((True, result))
            continue
        try:
            conn.send((True, getattr(rank, method)(*margs)))
        except BaseException as e:
            conn.send((False, f"{type(e).__name__}: {e}\n{traceback.format_exc()}"))


class TPInstance:
    """``tp`` rank processes of one SGLang instance; :meth:`call` runs a method on every rank."""

    def __init__(self, model_dir: str, tp: int, custom_loaders: list[str]) -> None:
        port = free_port()
        self.procs, self.conns = [], []
        for r in range(tp):
            parent, child = _FORK.Pipe()
            p = _FORK.Process(target=_serve, args=(child, (r, tp, port, model_dir,
                                                           custom_loaders)),
                              name=f"sglang-tp{r}", daemon=True)
            p.start()
            child.close()
            self.procs.append(p)
            self.conns.append(parent)
        for r, c in enumerate(self.conns):
            if not c.poll(900):
                raise SchedulerDied(f"TP rank {r} did not start in 900 s")
            ok, err = c.recv()
            if not ok:
                raise RuntimeError(f"TP rank {r} did not start: {err}")

    def call(self, method: str, *args: Any) -> list[Any]:
        for c in self.conns:
            c.send((method, args))
        out = []
        for r, c in enumerate(self.conns):
            try:
                ok, value = c.recv()
            except EOFError:
                raise SchedulerDied(f"SGLang TP rank {r} ended (exit code "
                                    f"{self.procs[r].join(10) or self.procs[r].exitcode}) "
                                    f"while handling {method}") from None
            if not ok:
                raise RuntimeError(f"TP rank {r}.{method}: {value}")
            out.append(value)
        return out

    def call_rank(self, rank: int, method: str, *args: Any) -> Any:
        self.conns[rank].send((method, args))
        ok, value = self.conns[rank].recv()
        if not ok:
            raise RuntimeError(f"TP rank {rank}.{method}: {value}")
        return value

    def alive(self) -> list[bool]:
        return [p.is_alive() for p in self.procs]

    def stop(self) -> None:
        for c, p in zip(self.conns, self.procs, strict=True):
            if p.is_alive():
                try:
                    c.send(None)
                except OSError:
                    pass
            p.join(30)
            if p.is_alive():
                p.terminate()
                p.join(10)


class EngineFront:
    """The ``sglang.Engine`` methods the adapter calls, as the Engine builds their requests."""

    def __init__(self, instance: TPInstance, model_dir: str, tp: int) -> None:
        from sglang.srt.runtime_context import publish
        from sglang.srt.server_args import ServerArgs

        self.instance = instance
        # The Engine's process holds the published ServerArgs too (TP size for the payloads).
        publish(ServerArgs(model_path=model_dir, device="cpu", tp_size=tp, dtype="bfloat16"),
                role="tokenizer")

    def begin_weight_update(self, selector: str = "all") -> tuple[bool, str]:
        from sglang.srt.managers.io_struct import BeginWeightUpdateReqInput

        return self.instance.call("request", BeginWeightUpdateReqInput(selector=selector))[0]

    def end_weight_update(self) -> tuple[bool, str]:
        from sglang.srt.managers.io_struct import EndWeightUpdateReqInput

        return self.instance.call("request", EndWeightUpdateReqInput())[0]

    def update_weights_from_disk(self, model_path: str, load_format: str | None = None
                                 ) -> tuple[bool, str]:
        from sglang.srt.managers.io_struct import UpdateWeightFromDiskReqInput

        # The TokenizerManager fills a missing load_format from the server's ("auto").
        return self.instance.call("request", UpdateWeightFromDiskReqInput(
            model_path=model_path, load_format=load_format or "auto"))[0]

    def update_weights_from_tensor(self, named_tensors: list[tuple[str, torch.Tensor]],
                                   load_format: str | None = None, flush_cache: bool = True
                                   ) -> tuple[bool, str]:
        from sglang.srt.entrypoints.engine import Engine
        from sglang.srt.managers.io_struct import UpdateWeightsFromTensorReqInput

        payloads = Engine._serialize_tensors_per_rank(self, named_tensors, load_format)
        return self.instance.call("request", UpdateWeightsFromTensorReqInput(
            serialized_named_tensors=payloads, load_format=load_format,
            flush_cache=flush_cache))[0]
