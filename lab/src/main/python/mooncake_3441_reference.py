"""`relay bench planner --against mooncake-3441`: the same deployment planned by Mooncake's own #3441
planner (``plan_stored_transfer_to_target_placement`` of the pinned wheel), for comparison.

Reads the deployment PlannerBench wrote (JSON: the manifest's tensors and stored fragments, the
boxes of each rank of the first instance, and the instance count: every instance has that layout),
says it in #3187 (a ``WeightManifest``; a ``WeightPlacementManifest`` whose ranks are (dp = instance,
pp = stage, tp, ep), each tensor's parallel axes read off the boxes), plans it and prints one JSON
line: ``{"reference": "planned", "reference_plan_ms": ..., "reference_peak_bytes": ...,
"reference_delivery_bytes": ...}``, or ``{"reference": "refused", "reference_refusal": "..."}``
when #3187 or #3441 refuses the deployment (a result, not an error). Peak bytes are the process's
peak resident set, inputs included.
"""

from __future__ import annotations

import json
import resource
import sys
import time

from mooncake.reshard.weight import (
    OwnershipAxis,
    ParallelRank,
    ParallelTopology,
    PlacementFragment,
    ReplicatedAxis,
    SplitAxis,
    StoredFragment,
    TensorDescriptor,
    TopologyParticipant,
    WeightManifest,
    WeightPlacementManifest,
    plan_stored_transfer_to_target_placement,
)


class Refused(Exception):
    pass


def axes_of(name, shape, holders, tp, ep, pp, instances):
    """Parallel axes of one tensor from the boxes of one instance: {rank: [(offset, shape)]}."""
    axes = []
    if instances > 1:
        axes.append(ReplicatedAxis("dp"))
    stages = {r["pp"] for r in holders}
    if pp > 1:
        if len(stages) != 1:
            raise Refused(f"{name}: held by several pipeline stages")
        axes.append(OwnershipAxis("pp"))
    boxes = [b for r in holders for b in r["boxes"]]
    if any(len(r["boxes"]) != 1 for r in holders):
        raise Refused(f"{name}: a rank holds several boxes of it")
    whole = all(tuple(o) == (0,) * len(shape) and tuple(s) == tuple(shape) for o, s in boxes)
    if tp == 1:
        return tuple(axes)
    if whole:
        if len(holders) == tp:
            axes.append(ReplicatedAxis("tp"))
        else:
            # Whole on some ranks only (an expert on its EP rank): owned, on every axis it varies.
            axes.append(OwnershipAxis("tp"))
            if ep > 1:
                axes.append(OwnershipAxis("ep"))
        return tuple(axes)
    dims = {d for o, s in boxes for d in range(len(shape)) if s[d] != shape[d]}
    if len(dims) != 1:
        raise Refused(f"{name}: split over {len(dims)} dimensions")
    axes.append(SplitAxis("tp", dims.pop()))
    return tuple(axes)


def main(path: str) -> int:
    with open(path, encoding="utf-8") as f:
        d = json.load(f)
    tp, ep, pp, instances = d["tp"], d["ep"], d["pp"], d["instances"]
    group = d["model"] + "/0"
    try:
        by_tensor = {}
        for r in d["ranks"]:
            for name, offset, shape in r["fragments"]:
                holder = by_tensor.setdefault(name, {}).setdefault(
                    r["index"], {"pp": r["pp"], "ep": r["ep"], "boxes": []})
                holder["boxes"].append((offset, shape))
        descriptors = {}
        for t in d["tensors"]:
            holders = list(by_tensor.get(t["name"], {}).values())
            if not holders:
                raise Refused(f"{t['name']}: no rank holds it")
            axes = axes_of(t["name"], t["shape"], holders, tp, ep, pp, instances)
            descriptors[t["name"]] = TensorDescriptor(
                tensor_id=t["name"], global_shape=tuple(t["shape"]), dtype=t["dtype"],
                itemsize=t["itemsize"],
                shard_dims=tuple(sorted(a.dim for a in axes if isinstance(a, SplitAxis))),
                layout_fingerprint="row-major", parallel_axes=axes)
        manifest = WeightManifest(
            namespace="weight-relay", resource_id=d["model"], revision="bench", weight_generation=0,
            group_id=group, manifest_key=f"{group}/manifest",
            tensors=tuple(descriptors[t["name"]] for t in d["tensors"]),
            fragments=tuple(
                StoredFragment(fragment_id=s["fragment"], tensor_id=s["tensor"],
                               global_offset=tuple(s["offset"]), local_shape=tuple(s["shape"]),
                               object_key=f"{group}/payload/{s['fragment']}", object_offset=0,
                               nbytes=s["bytes"])
                for s in d["stored"]),
            created_at="1970-01-01T00:00:00Z")
        itemsize = {t["name"]: t["itemsize"] for t in d["tensors"]}
        participants, fragments = [], []
        for i in range(instances):
            for r in d["ranks"]:
                rank = ParallelRank(dp=i, pp=r["pp"], tp=r["tp"], ep=r["ep"])
                participants.append(
                    TopologyParticipant(participant_id=f"i{i}r{r['index']}", rank=rank))
                for name, offset, shape in r["fragments"]:
                    count = itemsize[name]
                    for extent in shape:
                        count *= extent
                    fragments.append(PlacementFragment(
                        tensor_id=name, global_offset=tuple(offset), local_shape=tuple(shape),
                        nbytes=count, rank=rank))
        topology = ParallelTopology(tp_size=tp, pp_size=pp, ep_size=ep, dp_size=instances,
                                    participants=tuple(participants))
        placement = WeightPlacementManifest.from_fragments(
            resource_id=d["model"], revision="bench", weight_generation=0,
            placement_set_id="bench", topology=topology,
            tensors=tuple(descriptors.values()), fragments=tuple(fragments))
        started = time.perf_counter()
        plan = plan_stored_transfer_to_target_placement(manifest, placement)
        elapsed = time.perf_counter() - started
    except (Refused, ValueError) as error:
        print(json.dumps({"reference": "refused", "reference_refusal": str(error)[:500]},
                         separators=(",", ":")))
        return 0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(json.dumps({"reference": "planned", "reference_plan_ms": round(elapsed * 1000),
                      "reference_peak_bytes": peak,
                      "reference_delivery_bytes": plan.total_bytes}, separators=(",", ":")))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
