"""Plans the differential cases of Mooncake3441DifferentialTest with Mooncake's own #3441 planner.

Reads the cases (JSON, written by the test), builds each as Mooncake's #3187 contracts (a stored
``WeightManifest`` and a ``WeightPlacementManifest``) with the real package, plans it with
``plan_stored_transfer_to_target_placement`` and prints what each target rank receives, one line per
maximal byte run:

    run <seed> <participant> <tensor> <box offset, comma-separated> <byte offset in the box>
        <object key> <object offset> <length>

(one line, space-separated; the box's bytes are counted in row-major order, as #3187 lays out a
placement fragment), or ``refused <seed> <reason>`` when the real package refuses a case. The runs of
one box are sorted by their byte offset in the box and merged where both sides continue.
"""

from __future__ import annotations

import json
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

GROUP = "oracle"


def axis(wire: dict):
    if wire["semantics"] == "split":
        return SplitAxis(wire["kind"], wire["dim"])
    if wire["semantics"] == "replicated":
        return ReplicatedAxis(wire["kind"])
    return OwnershipAxis(wire["kind"])


def descriptor(tensor: dict) -> TensorDescriptor:
    axes = tuple(axis(a) for a in tensor["axes"])
    return TensorDescriptor(
        tensor_id=tensor["name"],
        global_shape=tuple(tensor["shape"]),
        dtype=tensor["dtype"],
        itemsize=tensor["itemsize"],
        shard_dims=tuple(sorted(a.dim for a in axes if isinstance(a, SplitAxis))),
        # Tied tensors must agree on every descriptor field but the id, the fingerprint included.
        layout_fingerprint=tensor.get("fingerprint", "row-major"),
        parallel_axes=axes,
        layer_id=tensor.get("layer"),
    )


def build(case: dict):
    tensors = {t["name"]: t for t in case["tensors"]}
    descriptors = [descriptor(t) for t in case["tensors"]]
    stored = [
        StoredFragment(
            fragment_id=f["fragment"],
            tensor_id=f["tensor"],
            global_offset=tuple(f["offset"]),
            local_shape=tuple(f["shape"]),
            object_key=f"{GROUP}/payload/{f['fragment']}",
            object_offset=0,
            nbytes=f["bytes"],
            aliases=tuple(tensors[f["tensor"]].get("aliases", ())),
        )
        for f in case["stored"]
    ]
    manifest = WeightManifest(
        namespace="weight-relay",
        resource_id="oracle-model",
        revision="r0",
        weight_generation=1,
        group_id=GROUP,
        manifest_key=f"{GROUP}/manifest",
        tensors=tuple(descriptors),
        fragments=tuple(stored),
        created_at="1970-01-01T00:00:00Z",
    )
    ranks = {}
    participants = []
    for p in case["participants"]:
        rank = ParallelRank(dp=p["dp"], tp=p["tp"], pp=p["pp"], ep=p["ep"])
        ranks[p["id"]] = rank
        participants.append(TopologyParticipant(participant_id=p["id"], rank=rank))
    topology = ParallelTopology(
        tp_size=case["tp"],
        pp_size=case["pp"],
        ep_size=case["ep"],
        dp_size=case["dp"],
        participants=tuple(participants),
    )
    fragments = []
    owner = {}
    for f in case["targets"]:
        t = tensors[f["tensor"]]
        itemsize = t["itemsize"]
        nbytes = itemsize
        for extent in f["shape"]:
            nbytes *= extent
        fragment = PlacementFragment(
            tensor_id=f["tensor"],
            global_offset=tuple(f["offset"]),
            local_shape=tuple(f["shape"]),
            nbytes=nbytes,
            rank=ranks[f["participant"]],
            aliases=tuple(t.get("aliases", ())),
        )
        fragments.append(fragment)
        owner[fragment.placement_fragment_id] = f["participant"]
    placement = WeightPlacementManifest.from_fragments(
        resource_id="oracle-model",
        revision="r0",
        weight_generation=1,
        placement_set_id="oracle",
        topology=topology,
        tensors=tuple(descriptors),
        fragments=tuple(fragments),
    )
    return manifest, placement, owner


def runs(plan, owner) -> list[str]:
    by_box: dict[tuple, list[list]] = {}
    for op in plan.operations:
        source = op.source
        target = op.target
        key = (owner[target.placement_fragment_id], target.tensor_id, target.global_offset)
        out = by_box.setdefault(key, [])
        for src, dst, length in op.iter_segments(max_segments=1 << 30):
            out.append([dst, source.object_key, source.object_offset + src, length])
    lines = []
    for (participant, tensor, offset), segments in sorted(by_box.items()):
        segments.sort(key=lambda s: s[0])
        merged: list[list] = []
        for dst, key, src, length in segments:
            last = merged[-1] if merged else None
            if last and last[0] + last[3] == dst and last[1] == key and last[2] + last[3] == src:
                last[3] += length
            else:
                merged.append([dst, key, src, length])
        box = ",".join(str(v) for v in offset)
        for dst, key, src, length in merged:
            lines.append(f"{participant} {tensor} {box} {dst} {key} {src} {length}")
    return lines


def main(cases_path: str, out_path: str) -> int:
    with open(cases_path, encoding="utf-8") as f:
        cases = json.load(f)["cases"]
    planning = 0.0
    with open(out_path, "w", encoding="utf-8") as out:
        for case in cases:
            seed = case["seed"]
            try:
                manifest, placement, owner = build(case)
                started = time.perf_counter()
                plan = plan_stored_transfer_to_target_placement(manifest, placement)
                planning += time.perf_counter() - started
            except ValueError as error:
                out.write(f"refused {seed} {str(error).replace(chr(10), ' ')}\n")
                continue
            for line in runs(plan, owner):
                out.write(f"run {seed} {line}\n")
    print(f"mooncake 3441: planned {len(cases)} cases in {planning * 1000:.0f} ms", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
