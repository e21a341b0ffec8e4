"""Writes every rank of a #3187 placement of a lab model, built with Mooncake's real package.

Usage: mooncake_3187_placement.py MODEL OUT. MODEL is the JSON the lab test writes: ``tp``, ``ep``
and ``tensors``, each with ``name``, ``shape``, ``dtype``, ``itemsize``, ``split`` (the catalog's
``DIM0``, ``DIM1``, ``KV_HEADS`` or ``REPLICATE``) and ``expert`` (routed-expert index, -1 for every
other tensor). OUT receives the canonical JSON of ``weight_placement_to_json``; participants are
``r0`` .. ``r{N-1}``.

Tensor parallelism (``ep`` 1): ``DIM0`` and ``DIM1`` tensors cut evenly along that dimension,
``REPLICATE`` ones whole on every rank, and ``KV_HEADS`` ones cut evenly by rows like ``DIM0``:
at TP 8 the two key/value heads of qwen2.5-0.5b become quarter heads, 16 rows a rank. vLLM instead
replicates each whole head on TP / heads ranks; #3187 has no axis for a tensor that is neither
split over every rank nor whole on every rank, so its manifest refuses that placement, and the KV
heads are split here. Expert parallelism (``tp`` 1): each routed expert's tensors whole on rank
``expert * ep / experts`` (whole experts, ``OwnershipAxis("ep")``), every other tensor whole on
every rank.
"""

from __future__ import annotations

import json
import sys

from mooncake.reshard.weight import (
    OwnershipAxis,
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

DIM = {"DIM0": 0, "KV_HEADS": 0, "DIM1": 1}


def numel(shape):
    count = 1
    for extent in shape:
        count *= extent
    return count


def main(model_path: str, out: str) -> int:
    with open(model_path, encoding="utf-8") as f:
        model = json.load(f)
    tp, ep = int(model["tp"]), int(model["ep"])
    if tp > 1 and ep > 1:
        raise SystemExit("one of tp and ep must be 1")
    ranks = [ParallelRank(tp=r) if ep == 1 else ParallelRank(ep=r) for r in range(max(tp, ep))]
    experts = 1 + max(int(t["expert"]) for t in model["tensors"])
    tensors, fragments = [], []
    for t in model["tensors"]:
        shape = tuple(int(d) for d in t["shape"])
        expert = int(t["expert"])
        if ep > 1:
            axes = (OwnershipAxis("ep"),) if expert >= 0 else (ReplicatedAxis("ep"),)
            owners = [expert * ep // experts] if expert >= 0 else range(ep)
            boxes = [(r, (0,) * len(shape), shape) for r in owners]
        elif t["split"] in DIM and tp > 1:
            dim = DIM[t["split"]]
            if shape[dim] % tp:
                raise SystemExit(f"{t['name']}: dim {dim} of {shape} is not a multiple of TP {tp}")
            axes = (SplitAxis("tp", dim),)
            step = shape[dim] // tp
            boxes = []
            for r in range(tp):
                offset = tuple(r * step if d == dim else 0 for d in range(len(shape)))
                local = tuple(step if d == dim else e for d, e in enumerate(shape))
                boxes.append((r, offset, local))
        else:
            axes = (ReplicatedAxis("tp"),)
            boxes = [(r, (0,) * len(shape), shape) for r in range(tp)]
        tensors.append(
            TensorDescriptor(
                tensor_id=t["name"],
                global_shape=shape,
                dtype=t["dtype"],
                itemsize=int(t["itemsize"]),
                shard_dims=tuple(sorted(a.dim for a in axes if isinstance(a, SplitAxis))),
                layout_fingerprint="row-major",
                parallel_axes=axes,
                expert_id=expert if expert >= 0 else None,
            )
        )
        for r, offset, local in boxes:
            fragments.append(
                PlacementFragment(
                    tensor_id=t["name"],
                    global_offset=offset,
                    local_shape=local,
                    nbytes=numel(local) * int(t["itemsize"]),
                    rank=ranks[r],
                )
            )
    topology = ParallelTopology(
        tp_size=tp,
        pp_size=1,
        ep_size=ep,
        dp_size=1,
        participants=tuple(
            TopologyParticipant(participant_id=f"r{i}", rank=rank) for i, rank in enumerate(ranks)
        ),
    )
    placement = WeightPlacementManifest.from_fragments(
        resource_id=model["model"],
        revision="lab",
        weight_generation=0,
        placement_set_id=f"tp{tp}-ep{ep}",
        topology=topology,
        tensors=tuple(tensors),
        fragments=tuple(fragments),
    )
    with open(out, "w", encoding="utf-8") as f:
        f.write(weight_placement_to_json(placement))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
