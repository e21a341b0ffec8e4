"""What the lab tests share: the test model, its rank clients and engines."""

from __future__ import annotations

import numpy as np
import torch

from weight_relay import ControlClient, LoaderClient, Manifest, PublisherClient

ROLLOUT = {"embed.weight": "bf16", "big": "bf16"}  # fp32 trainer tensors published as bf16
SPLIT = {"embed.weight": 0, "layers.0.qkv": 2, "layers.0.up": 1, "layers.0.down": 0, "big": 0}
PAD = {"layers.0.up": 3, "embed.weight": 5}  # padded row strides in direct buffers


def state_dict(seed: int) -> dict[str, torch.Tensor]:
    """bf16 and fp32 tensors of odd shapes; one non-contiguous; several spanning fragments."""
    g = torch.Generator().manual_seed(seed)
    down = torch.randn(9, 17, generator=g).to(torch.bfloat16)
    return {
        "embed.weight": torch.randn(1001, 67, generator=g),
        "layers.0.qkv": torch.randn(3, 5, 7, generator=g).to(torch.bfloat16),
        "layers.0.up": torch.randn(129, 33, generator=g).to(torch.bfloat16),
        "layers.0.down": down.t(),  # [17, 9], strided
        "norm.bias": torch.randn(13, generator=g),
        "scale": torch.randn((), generator=g),
        "big": torch.randn(2048, 3, generator=g),
    }


def manifest(model: str) -> Manifest:
    return Manifest.of_state_dict(model, state_dict(0), ROLLOUT, max_fragment_bytes=4096)


def expected(sd: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """What the engines must hold: fp32 -> bf16 rounded to nearest even, as torch does."""
    return {k: (v.to(torch.bfloat16) if k in ROLLOUT else v).contiguous() for k, v in sd.items()}


def bits(t) -> np.ndarray:
    """The raw bits of a torch tensor or numpy array (any strides), as a contiguous array."""
    if isinstance(t, torch.Tensor):
        width = t.element_size()
        t = t.view({1: torch.int8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[width])
        return t.contiguous().numpy()
    a = np.asarray(t).copy(order="C")  # (ascontiguousarray would make a 0-d array 1-d)
    return a.view({1: np.int8, 2: np.int16, 4: np.int32, 8: np.int64}[a.dtype.itemsize])


def mapping_range(m) -> tuple[int, int]:
    base = np.frombuffer(m, dtype=np.uint8).ctypes.data
    return base, base + len(m)


def ranks(lab: dict, control: ControlClient) -> dict[str, PublisherClient]:
    return {name[len("publisher-"):]: PublisherClient(url, lab["trainerToken"],
                                                      coordinator=control, reserve_timeout=60)
            for name, url in lab["services"].items() if name.startswith("publisher-")}


def engines(lab: dict) -> list[tuple[str, LoaderClient]]:
    return [(i, LoaderClient(lab["services"]["loader-" + i], lab["loaderTokens"][i]))
            for i in lab["instances"]]
