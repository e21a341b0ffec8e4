"""A two-layer Llama built from vLLM's own tensor-parallel layers (``VocabParallelEmbedding``,
``QKVParallelLinear``, ``MergedColumnParallelLinear``, ``RowParallelLinear``, ``RMSNorm``,
``ParallelLMHead``) with Llama's ``load_weights`` (HF checkpoint names mapped onto the fused
``qkv_proj`` / ``gate_up_proj``): each TP rank's weight loaders cut that rank's shard out of the
full checkpoint tensor, as in any vLLM model. vLLM's own ``LlamaForCausalLM`` cannot be built on
this CPU machine (its attention layer picks a GPU backend); these layers and their loaders are the
part a weight update touches.

:class:`PerTensorFp8` is a quantization in vLLM's ``QuantizationConfig`` / ``LinearMethodBase``
interface that does what vLLM's ``Fp8PerTensorOnlineLinearMethod`` does after loading (per-tensor
scale, e4m3 weight stored transposed: the kernel format differs from the checkpoint format), in
plain torch, because vLLM's ``scaled_fp8_quant`` is a CUDA op. A checkpoint-format update reaches
such a layer correctly only through vLLM's layerwise reload."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import torch
from torch import nn
from vllm.model_executor.layers.layernorm import RMSNorm
from vllm.model_executor.layers.linear import (
    LinearBase,
    LinearMethodBase,
    MergedColumnParallelLinear,
    QKVParallelLinear,
    RowParallelLinear,
    UnquantizedLinearMethod,
)
from vllm.model_executor.layers.quantization.base_config import QuantizationConfig
from vllm.model_executor.layers.vocab_parallel_embedding import (
    ParallelLMHead,
    VocabParallelEmbedding,
)
from vllm.model_executor.model_loader.weight_utils import default_weight_loader
from vllm.model_executor.parameter import ModelWeightParameter
from vllm.model_executor.utils import replace_parameter, set_weight_attrs

VOCAB, HIDDEN, HEAD, HEADS, KV_HEADS, FFN, LAYERS = 64, 32, 8, 4, 2, 64, 2
DTYPE = torch.bfloat16
FP8_MAX = 448.0
STACKED = [(".qkv_proj", ".q_proj", "q"), (".qkv_proj", ".k_proj", "k"),
           (".qkv_proj", ".v_proj", "v"), (".gate_up_proj", ".gate_proj", 0),
           (".gate_up_proj", ".up_proj", 1)]


def checkpoint(seed: int) -> dict[str, torch.Tensor]:
    """The HF-named checkpoint (what the trainer publishes), bf16."""
    g = torch.Generator().manual_seed(seed)
    shapes: dict[str, tuple[int, ...]] = {"model.embed_tokens.weight": (VOCAB, HIDDEN)}
    for i in range(LAYERS):
        p = f"model.layers.{i}."
        shapes.update({
            p + "input_layernorm.weight": (HIDDEN,),
            p + "self_attn.q_proj.weight": (HEADS * HEAD, HIDDEN),
            p + "self_attn.k_proj.weight": (KV_HEADS * HEAD, HIDDEN),
            p + "self_attn.v_proj.weight": (KV_HEADS * HEAD, HIDDEN),
            p + "self_attn.o_proj.weight": (HIDDEN, HEADS * HEAD),
            p + "post_attention_layernorm.weight": (HIDDEN,),
            p + "mlp.gate_proj.weight": (FFN, HIDDEN),
            p + "mlp.up_proj.weight": (FFN, HIDDEN),
            p + "mlp.down_proj.weight": (HIDDEN, FFN),
        })
    shapes.update({"model.norm.weight": (HIDDEN,), "lm_head.weight": (VOCAB, HIDDEN)})
    return {n: torch.randn(s, generator=g).to(DTYPE) for n, s in shapes.items()}


def fp8(weight: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-tensor e4m3 of a [out, in] weight: (the [in, out] transposed view, fp32 scale [1])."""
    w = weight.float()
    scale = (w.abs().max().clamp(min=1e-12) / FP8_MAX).reshape(1)
    q = (w / scale).clamp(-FP8_MAX, FP8_MAX).to(torch.float8_e4m3fn)
    return q.t(), scale


class PerTensorFp8Method(LinearMethodBase):
    """Checkpoint format: a bf16 [out, in] weight with vLLM's loader; kernel format after
    loading: ``weight`` e4m3 [in, out] and ``weight_scale`` (see :func:`fp8`)."""

    def create_weights(self, layer: nn.Module, input_size_per_partition: int,
                       output_partition_sizes: list[int], input_size: int, output_size: int,
                       params_dtype: torch.dtype, **extra_weight_attrs: Any) -> None:
        weight_loader = extra_weight_attrs.pop("weight_loader")
        weight = ModelWeightParameter(
            data=torch.empty(sum(output_partition_sizes), input_size_per_partition,
                             dtype=params_dtype),
            input_dim=1, output_dim=0, weight_loader=weight_loader)
        layer.register_parameter("weight", weight)
        set_weight_attrs(weight, extra_weight_attrs)

    def process_weights_after_loading(self, layer: nn.Module) -> None:
        q, scale = fp8(layer.weight.data)
        replace_parameter(layer, "weight", q)
        replace_parameter(layer, "weight_scale", scale)

    def apply(self, layer: nn.Module, x: torch.Tensor,
              bias: torch.Tensor | None = None) -> torch.Tensor:
        y = x.float() @ (layer.weight.float() * layer.weight_scale)
        return (y if bias is None else y + bias.float()).to(x.dtype)


class PerTensorFp8(QuantizationConfig):
    """The linear layers whose prefix ends with one of ``suffixes`` get
    :class:`PerTensorFp8Method`, the others vLLM's ``UnquantizedLinearMethod``."""

    def __init__(self, suffixes: tuple[str, ...] = ("o_proj", "down_proj")) -> None:
        super().__init__()
        self.suffixes = suffixes

    def get_name(self) -> Any:
        return "weight_relay_test_fp8"

    def get_supported_act_dtypes(self) -> list[torch.dtype]:
        return [DTYPE]

    @classmethod
    def get_min_capability(cls) -> int:
        return 0

    @staticmethod
    def get_config_filenames() -> list[str]:
        return []

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> PerTensorFp8:
        return cls()

    def get_quant_method(self, layer: nn.Module, prefix: str) -> Any:
        if isinstance(layer, LinearBase):
            if prefix.endswith(self.suffixes):
                return PerTensorFp8Method()
            return UnquantizedLinearMethod()
        return None


class DecoderLayer(nn.Module):
    def __init__(self, prefix: str, quant_config: QuantizationConfig | None) -> None:
        super().__init__()
        self.input_layernorm = RMSNorm(HIDDEN, dtype=DTYPE)
        self.post_attention_layernorm = RMSNorm(HIDDEN, dtype=DTYPE)
        self.self_attn = nn.Module()
        self.self_attn.qkv_proj = QKVParallelLinear(
            HIDDEN, HEAD, HEADS, KV_HEADS, bias=False, params_dtype=DTYPE,
            quant_config=quant_config, prefix=f"{prefix}.self_attn.qkv_proj")
        self.self_attn.o_proj = RowParallelLinear(
            HEADS * HEAD, HIDDEN, bias=False, params_dtype=DTYPE, quant_config=quant_config,
            prefix=f"{prefix}.self_attn.o_proj")
        self.mlp = nn.Module()
        self.mlp.gate_up_proj = MergedColumnParallelLinear(
            HIDDEN, [FFN, FFN], bias=False, params_dtype=DTYPE, quant_config=quant_config,
            prefix=f"{prefix}.mlp.gate_up_proj")
        self.mlp.down_proj = RowParallelLinear(
            FFN, HIDDEN, bias=False, params_dtype=DTYPE, quant_config=quant_config,
            prefix=f"{prefix}.mlp.down_proj")


class TinyLlamaForCausalLM(nn.Module):
    """A new-style vLLM model class (``vllm_config``, ``prefix``), for vLLM's
    ``initialize_model``."""

    def __init__(self, *, vllm_config: Any, prefix: str = "") -> None:
        super().__init__()
        qc = vllm_config.quant_config
        self.model = nn.Module()
        self.model.embed_tokens = VocabParallelEmbedding(VOCAB, HIDDEN, params_dtype=DTYPE)
        self.model.layers = nn.ModuleList(
            [DecoderLayer(f"model.layers.{i}", qc) for i in range(LAYERS)])
        self.model.norm = RMSNorm(HIDDEN, dtype=DTYPE)
        self.lm_head = ParallelLMHead(VOCAB, HIDDEN, params_dtype=DTYPE)

    def load_weights(self, weights: Iterable[tuple[str, torch.Tensor]]) -> set[str]:
        """Llama's: HF names onto the fused parameters, each parameter's own weight loader."""
        params = dict(self.named_parameters())
        loaded: set[str] = set()
        for name, w in weights:
            for fused, part, shard in STACKED:
                if part in name:
                    name = name.replace(part, fused)
                    param = params[name]
                    param.weight_loader(param, w, shard)
                    break
            else:
                param = params[name]
                getattr(param, "weight_loader", default_weight_loader)(param, w)
            loaded.add(name)
        return loaded


def shard(sd: dict[str, torch.Tensor], rank: int, tp: int) -> dict[str, torch.Tensor]:
    """What TP rank ``rank`` must hold of checkpoint ``sd``, by vLLM parameter name (checkpoint
    format: before any quantization)."""
    def rows(t: torch.Tensor) -> torch.Tensor:
        n = t.shape[0] // tp
        return t[rank * n:(rank + 1) * n]

    def cols(t: torch.Tensor) -> torch.Tensor:
        n = t.shape[1] // tp
        return t[:, rank * n:(rank + 1) * n]

    out = {"model.embed_tokens.weight": rows(sd["model.embed_tokens.weight"]),
           "model.norm.weight": sd["model.norm.weight"],
           "lm_head.weight": rows(sd["lm_head.weight"])}
    for i in range(LAYERS):
        p = f"model.layers.{i}."
        a, m = p + "self_attn.", p + "mlp."
        out[a + "qkv_proj.weight"] = torch.cat(
            [rows(sd[a + k + "_proj.weight"]) for k in "qkv"])
        out[a + "o_proj.weight"] = cols(sd[a + "o_proj.weight"])
        out[m + "gate_up_proj.weight"] = torch.cat(
            [rows(sd[m + "gate_proj.weight"]), rows(sd[m + "up_proj.weight"])])
        out[m + "down_proj.weight"] = cols(sd[m + "down_proj.weight"])
        for norm in ("input_layernorm", "post_attention_layernorm"):
            out[p + norm + ".weight"] = sd[p + norm + ".weight"]
    return out


def kernel(expected: dict[str, torch.Tensor], quantized: tuple[str, ...]
           ) -> dict[str, torch.Tensor]:
    """The rank's parameters in kernel format: the layers named in ``quantized`` as
    :func:`fp8` makes them (``weight`` and ``weight_scale``)."""
    out = dict(expected)
    for name, t in expected.items():
        if name.endswith(tuple(s + ".weight" for s in quantized)):
            q, scale = fp8(t)
            out[name] = q
            out[name[:-len("weight")] + "weight_scale"] = scale
    return out
