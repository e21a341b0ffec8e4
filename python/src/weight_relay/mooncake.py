"""Mooncake's #3187 weight placements at our edge (``mooncake.reshard.weight``, imported only when
one of its objects is passed in: the package is optional, never required).

A rank's placement given as #3187 becomes one of our fragment templates
(``POST /api/v1/placements/mooncake-3187`` of control-api): :func:`placement_json` takes a
``WeightPlacementManifest`` (or its canonical JSON), :class:`FragmentBinding` says where each
placement fragment lands in the worker's buffers (what #3187's runtime binding says with
addresses, said with our buffer ids and offsets), :func:`packed_bindings` packs a rank's fragments
densely in one buffer, and :meth:`MooncakePlacements.import_rank` stores it and answers the
template digest a worker names as its ``placement``. Everything #3187 does not say (mode, node,
NIC, buffers) stays in the worker's registration.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ._http import RestClient, field
from .errors import UsageError, WrongTypeError


@dataclass(frozen=True)
class FragmentBinding:
    """Where one #3187 placement fragment lands: element ``index`` of its box at ``buffer_offset +
    sum(index[d] * strides_bytes[d])`` of buffer ``buffer_id`` (dense row-major when
    ``strides_bytes`` is None)."""

    placement_fragment_id: str
    buffer_id: str
    buffer_offset: int
    strides_bytes: tuple[int, ...] | None = None

    def to_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {"placementFragmentId": self.placement_fragment_id,
                                "bufferId": self.buffer_id, "bufferOffset": int(self.buffer_offset)}
        if self.strides_bytes is not None:
            body["stridesBytes"] = [int(s) for s in self.strides_bytes]
        return body


def placement_json(placement: Any) -> str:
    """The canonical #3187 JSON of ``placement``: a ``WeightPlacementManifest`` of
    ``mooncake.reshard.weight`` (serialized with its own ``weight_placement_to_json``) or that JSON
    already."""
    if isinstance(placement, str):
        return placement
    try:
        from mooncake.reshard.weight import WeightPlacementManifest, weight_placement_to_json
    except ImportError as exc:  # pragma: no cover - only without the optional package
        raise WrongTypeError("a #3187 placement object needs mooncake.reshard.weight installed "
                        "(mooncake-transfer-engine); pass its JSON instead") from exc
    if not isinstance(placement, WeightPlacementManifest):
        raise WrongTypeError(f"not a #3187 WeightPlacementManifest: {type(placement).__name__}")
    return str(weight_placement_to_json(placement))


def packed_bindings(placement: Any, participant_id: str, buffer_id: str,
                    align: int = 1) -> list[FragmentBinding]:
    """Bindings of every fragment of ``participant_id``, packed in ``buffer_id`` in the order of
    its #3187 part, each at an ``align``-ed offset, dense row-major."""
    text = placement_json(placement)
    try:
        for part in json.loads(text)["parts"]:
            if part["participant_id"] != participant_id:
                continue
            out, cursor = [], 0
            for fragment in part["fragments"]:
                cursor = -(-cursor // align) * align
                out.append(FragmentBinding(str(fragment["placement_fragment_id"]), buffer_id,
                                           cursor))
                cursor += int(fragment["nbytes"])
            return out
    except (KeyError, TypeError, ValueError) as e:  # ValueError: JSONDecodeError, int()
        raise UsageError(f"not a #3187 placement ({type(e).__name__} {e}): {text:.300}") from e
    raise UsageError(f"the #3187 placement has no participant {participant_id!r}")


class MooncakePlacements:
    """control-api's import of #3187 placements, with a loader token."""

    def __init__(self, control_url: str, token: str | None = None, timeout: float = 120.0) -> None:
        self.rest = RestClient(control_url, token, timeout, "control-api")

    def import_rank(self, placement: Any, participant_id: str,
                    bindings: Sequence[FragmentBinding]) -> str:
        """Stores rank ``participant_id`` of ``placement`` as a fragment template; returns its
        digest. Raises the typed error of control-api's problem (``mooncake-3187-inexpressible``,
        422, names the #3187 field and value)."""
        body = {"placement": placement_json(placement), "participantId": participant_id,
                "bindings": [b.to_json() for b in bindings]}
        what = f"import #3187 placement of {participant_id}"
        answer = self.rest.call_object("POST", "/api/v1/placements/mooncake-3187", body, what)
        return str(field(answer, "digest", what))
