"""Writes a #3187 placement of the control-api tests' manifest, built with Mooncake's real package.

Usage: mooncake_tp_placement.py TP OUT. The manifest (``ControlApiClientSupport.manifest``):
``embed.weight`` [256, 32] split by rows over the TP ranks, ``layer.0.weight`` [32, 32] split by
columns, ``layer.0.bias`` [32] replicated, all bf16. OUT receives the canonical JSON of
``weight_placement_to_json``; participants are ``r0`` .. ``r{TP-1}``.
"""

from __future__ import annotations

import sys

from mooncake.reshard.weight import (
    ParallelRank,
    ParallelTopology,
    PlacementFragment,
    ReplicatedAxis,
    SplitAxis,
    TensorDescriptor,
    TopologyParticipant,
    WeightPlacementManifest,
    weight_placement_to_json,
)


def descriptor(name, shape, axes):
    return TensorDescriptor(
        tensor_id=name,
        global_shape=shape,
        dtype="BF16",
        itemsize=2,
        shard_dims=tuple(sorted(a.dim for a in axes if isinstance(a, SplitAxis))),
        layout_fingerprint="row-major",
        parallel_axes=axes,
    )


def main(tp: int, out: str) -> int:
    tensors = [
        descriptor("embed.weight", (256, 32), (SplitAxis("tp", 0),)),
        descriptor("layer.0.weight", (32, 32), (SplitAxis("tp", 1),)),
        descriptor("layer.0.bias", (32,), (ReplicatedAxis("tp"),)),
    ]
    fragments = []
    participants = []
    for r in range(tp):
        rank = ParallelRank(tp=r)
        participants.append(TopologyParticipant(participant_id=f"r{r}", rank=rank))
        rows, cols = 256 // tp, 32 // tp
        for name, offset, shape in (
            ("embed.weight", (r * rows, 0), (rows, 32)),
            ("layer.0.weight", (0, r * cols), (32, cols)),
            ("layer.0.bias", (0,), (32,)),
        ):
            count = 1
            for extent in shape:
                count *= extent
            fragments.append(
                PlacementFragment(
                    tensor_id=name,
                    global_offset=offset,
                    local_shape=shape,
                    nbytes=count * 2,
                    rank=rank,
                )
            )
    topology = ParallelTopology(
        tp_size=tp, pp_size=1, ep_size=1, dp_size=1, participants=tuple(participants)
    )
    placement = WeightPlacementManifest.from_fragments(
        resource_id="control-api-test",
        revision="r0",
        weight_generation=0,
        placement_set_id="tp",
        topology=topology,
        tensors=tuple(tensors),
        fragments=tuple(fragments),
    )
    with open(out, "w", encoding="utf-8") as f:
        f.write(weight_placement_to_json(placement))
    return 0


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]), sys.argv[2]))
