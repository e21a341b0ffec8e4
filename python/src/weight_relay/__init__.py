"""weight-relay for Python trainers and rollout engines.

Trainer side: :class:`PublisherClient` (one per rank) and :class:`ControlClient` (the
coordinator's open/commit/abort). Engine side: :class:`LoaderClient` (one per engine instance).
Adapters for VeRL, vLLM and SGLang live in :mod:`weight_relay.adapters`. Needs only the standard
library and numpy; torch is used when present.
"""

from .errors import (BadRequestError, ConflictError, NotFoundError, PublishFailedError,
                     RelayCallError, RelayError, StagingFullError, UnauthorizedError,
                     UnavailableError, UpdateFailedError)
from .loader import (COMPAT_BUFFER, DirectFragment, LoaderClient, compat_worker, direct_worker,
                     tensor_parallel_fragments)
from .manifest import Manifest, SafetensorsLayout, TensorSpec
from .mooncake import FragmentBinding, MooncakePlacements, packed_bindings, placement_json
from .publisher import (ControlClient, OpenedGeneration, PublisherClient, RankPublish, RankResult,
                        publish_generation)

__version__ = "0.1.0"

__all__ = [
    "BadRequestError", "COMPAT_BUFFER", "ConflictError", "ControlClient", "DirectFragment",
    "FragmentBinding", "LoaderClient", "Manifest", "MooncakePlacements", "NotFoundError",
    "OpenedGeneration", "PublishFailedError", "PublisherClient", "RankPublish", "RankResult",
    "RelayCallError", "RelayError", "SafetensorsLayout", "StagingFullError", "TensorSpec",
    "UnauthorizedError", "UnavailableError", "UpdateFailedError", "compat_worker",
    "direct_worker", "packed_bindings", "placement_json", "publish_generation",
    "tensor_parallel_fragments",
]
