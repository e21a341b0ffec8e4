"""Framework adapters: :mod:`.verl` (a checkpoint-engine backend), :mod:`.vllm` (a weight-transfer
engine and the ``disk`` image), :mod:`.sglang` (a custom weight loader and the image for
``update_weights_from_disk``). Each imports its framework's real base classes when the framework
imports here, and otherwise a stand-in of the pinned version's documented interface
(:mod:`._standin`, named as such in ``BASES``)."""

import os

from ..errors import UsageError
from ..loader import LoaderClient


def image_directory(loader: LoaderClient, worker_id: str | None, directory: str,
                    filename: str = "model.safetensors") -> str:
    """A directory holding exactly one ``*.safetensors``: a symlink to the shared-memory file
    that holds ``worker_id``'s compat image (no copy), for loaders that read a model directory
    (vLLM's ``disk`` backend, SGLang's ``update_weights_from_disk``). Replaces a previous link."""
    target = loader.image_file(worker_id)
    os.makedirs(directory, exist_ok=True)
    for name in os.listdir(directory):
        if name.endswith(".safetensors") and name != filename:
            raise UsageError(f"{directory} already holds {name}; one image per directory")
    link = os.path.join(directory, filename)
    tmp = link + ".tmp"
    if os.path.lexists(tmp):
        os.unlink(tmp)
    os.symlink(target, tmp)
    os.replace(tmp, link)
    return directory
