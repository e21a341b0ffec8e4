"""SGLang (0.5.23): a custom weight loader for parameter-direct mode, and the compat image as a
model directory for ``update_weights_from_disk``.

Parameter-direct: start SGLang with
``--custom-weight-loader weight_relay.adapters.sglang.load_direct``; after the loader reported
UPDATED, call ``update_weights_from_tensor(named_tensors=direct_named_tensors(loader, worker_id,
manifest), load_format="weight_relay.adapters.sglang.load_direct")``.
SGLang then calls ``load_direct(model, named_tensors)``: each tensor is this TP rank's shard as
a strided view of the receive buffer, copied into the parameter of that name (one copy, buffer
to device). Compat: :func:`disk_directory` gives ``update_weights_from_disk`` a directory whose
one ``model.safetensors`` is the shared image."""

from __future__ import annotations

import logging
from typing import Any

from ..errors import UnknownNameError, UsageError
from ..loader import LoaderClient
from . import image_directory

_log = logging.getLogger(__name__)

try:  # SGLang's own dispatch when it imports here
    from sglang.srt.model_executor.model_runner_components.weight_updater import (  # noqa: F401
        WeightUpdater,
    )

    STANDIN = False
except ImportError as _missing:  # only a missing SGLang: a broken install raises, never hides
    STANDIN = True
    _log.warning("SGLang does not import here (%s): weight_relay.adapters.sglang runs without "
                 "SGLang's own classes (STANDIN = True)", _missing)

LOAD_FORMAT = __name__ + ".load_direct"


def direct_named_tensors(loader: LoaderClient, worker_id: str | None, manifest: Any
                         ) -> list[tuple[str, Any]]:
    """``[(name, shard view)]`` of a direct worker (views at the registered strides, typed by
    ``manifest``: the published :class:`~weight_relay.Manifest` or ``{tensor: dtype}``); a
    tensor held in several boxes by one worker is refused (one box per parameter and rank)."""
    out, seen = [], set()
    for f, t in loader.direct_tensors(worker_id, framework="torch", manifest=manifest):
        if f["tensor"] in seen:
            raise UsageError(f"worker {worker_id} holds {f['tensor']} in several boxes")
        seen.add(f["tensor"])
        out.append((f["tensor"], t))
    return out


def load_direct(model: Any, named_tensors: list[tuple[str, Any]]) -> None:
    """The custom weight loader: checks every shape first, then copies each shard into the
    parameter (or buffer) of that name, so a mismatch changes no weight."""
    params = dict(model.named_parameters())
    params.update(dict(model.named_buffers()))
    for name, t in named_tensors:
        p = params.get(name)
        if p is None:
            raise UnknownNameError(f"model has no parameter {name}")
        if tuple(p.shape) != tuple(t.shape):
            raise UsageError(f"parameter {name}: shard {tuple(t.shape)}, model {tuple(p.shape)}")
    for name, t in named_tensors:
        params[name].data.copy_(t)


def disk_directory(loader: LoaderClient, worker_id: str | None, directory: str) -> str:
    """The ``model_path`` for ``update_weights_from_disk``: one ``model.safetensors`` linking to
    the worker's compat image in shared memory."""
    return image_directory(loader, worker_id, directory)
