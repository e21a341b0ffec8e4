"""weight-relay for Python trainers and rollout engines.

Trainer side: :class:`PublisherClient` (one per rank) and :class:`ControlClient` (the
coordinator's open/commit/abort). Engine side: :class:`LoaderClient` (one per engine instance).
Adapters for VeRL, vLLM and SGLang live in :mod:`weight_relay.adapters`. Needs only the standard
library and numpy; torch is used when present.

The clients that map shared memory (:class:`LoaderClient`, :class:`PublisherClient`) are context
managers with an idempotent ``close()``. Every error is a :class:`RelayError`. The package logs
to the ``weight_relay`` logger (and its children ``.http``, ``.loader``, ``.publisher``,
``.mooncake``, ``.crc32c``, ``.adapters.*``) and adds no handler of its own.
"""

import logging

from .answers import (
    PAUSED_REBUILD,
    RESUMED_OLD,
    RUNNING,
    UPDATED,
    InstanceStatus,
    PlacedBuffer,
    Reservation,
    UpdateProgress,
)
from .errors import (
    BadRequestError,
    ClosedError,
    ConflictError,
    MapError,
    NotFoundError,
    NotRegisteredError,
    ProtocolError,
    PublishFailedError,
    RelayCallError,
    RelayError,
    StagingFullError,
    StagingMapError,
    UnauthorizedError,
    UnavailableError,
    UnknownNameError,
    UpdateFailedError,
    UpdateInFlightError,
    UpdateTimeoutError,
    UsageError,
    VerificationError,
    WeightLoadError,
    WrongTypeError,
)
from .loader import (
    COMPAT_BUFFER,
    DirectFragment,
    LoaderClient,
    compat_worker,
    direct_worker,
    tensor_parallel_fragments,
)
from .manifest import Manifest, SafetensorsLayout, TensorSpec
from .mooncake import FragmentBinding, MooncakePlacements, packed_bindings, placement_json
from .publisher import (
    ControlClient,
    OpenedGeneration,
    PublisherClient,
    RankPublish,
    RankResult,
    publish_generation,
)

__version__ = "0.1.0"

logging.getLogger(__name__).addHandler(logging.NullHandler())

__all__ = [
    "BadRequestError", "COMPAT_BUFFER", "ClosedError", "ConflictError", "ControlClient",
    "DirectFragment", "FragmentBinding", "InstanceStatus", "LoaderClient", "Manifest", "MapError",
    "MooncakePlacements", "NotFoundError", "NotRegisteredError", "OpenedGeneration",
    "PAUSED_REBUILD", "PlacedBuffer", "ProtocolError", "PublishFailedError", "PublisherClient",
    "RESUMED_OLD", "RUNNING", "RankPublish", "RankResult", "RelayCallError", "RelayError",
    "Reservation", "SafetensorsLayout", "StagingFullError", "StagingMapError", "TensorSpec",
    "UPDATED", "UnauthorizedError", "UnavailableError", "UnknownNameError", "UpdateFailedError",
    "UpdateInFlightError", "UpdateProgress", "UpdateTimeoutError", "UsageError",
    "VerificationError", "WeightLoadError", "compat_worker", "direct_worker", "packed_bindings",
    "placement_json", "publish_generation", "tensor_parallel_fragments", "WrongTypeError",
]
