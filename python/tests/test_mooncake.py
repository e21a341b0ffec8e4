"""#3187 placements from Mooncake's real package (``mooncake.reshard.weight``, pinned in the test
venv) registered through control-api's import: the object or its JSON, packed bindings, the
template digest a worker names, and refusals that name the #3187 field."""

from __future__ import annotations

import json
import re

import pytest
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

from weight_relay import (
    FragmentBinding,
    MooncakePlacements,
    RelayCallError,
    packed_bindings,
    placement_json,
)
from weight_relay.errors import PROBLEM_BASE


def tp_placement(tp: int) -> WeightPlacementManifest:
    """``w`` [8, 4] bf16 split by rows over ``tp`` ranks, ``b`` [4] replicated."""
    tensors = (
        TensorDescriptor(tensor_id="w", global_shape=(8, 4), dtype="BF16", itemsize=2,
                         shard_dims=(0,), layout_fingerprint="row-major",
                         parallel_axes=(SplitAxis("tp", 0),)),
        TensorDescriptor(tensor_id="b", global_shape=(4,), dtype="BF16", itemsize=2,
                         shard_dims=(), layout_fingerprint="row-major",
                         parallel_axes=(ReplicatedAxis("tp"),)),
    )
    fragments, participants = [], []
    for r in range(tp):
        rank = ParallelRank(tp=r)
        participants.append(TopologyParticipant(participant_id=f"r{r}", rank=rank))
        rows = 8 // tp
        fragments.append(PlacementFragment(tensor_id="w", global_offset=(r * rows, 0),
                                           local_shape=(rows, 4), nbytes=rows * 4 * 2, rank=rank))
        fragments.append(PlacementFragment(tensor_id="b", global_offset=(0,), local_shape=(4,),
                                           nbytes=8, rank=rank))
    topology = ParallelTopology(tp_size=tp, pp_size=1, ep_size=1, dp_size=1,
                                participants=tuple(participants))
    return WeightPlacementManifest.from_fragments(
        resource_id="m", revision="r", weight_generation=0, placement_set_id="tp",
        topology=topology, tensors=tensors, fragments=tuple(fragments))


def test_placement_objects_and_their_json_are_the_same_placement():
    p = tp_placement(2)
    assert placement_json(p) == weight_placement_to_json(p)
    assert placement_json(weight_placement_to_json(p)) == weight_placement_to_json(p)
    with pytest.raises(TypeError, match="WeightPlacementManifest"):
        placement_json(object())


def test_packed_bindings_follow_the_part_in_order():
    p = tp_placement(2)
    bindings = packed_bindings(p, "r1", "params", align=16)
    part = next(x for x in json.loads(placement_json(p))["parts"] if x["participant_id"] == "r1")
    assert [b.placement_fragment_id for b in bindings] == [
        f["placement_fragment_id"] for f in part["fragments"]]
    sizes = [f["nbytes"] for f in part["fragments"]]
    assert bindings[0].buffer_offset == 0
    assert bindings[1].buffer_offset == -(-sizes[0] // 16) * 16
    with pytest.raises(ValueError, match="r7"):
        packed_bindings(p, "r7", "params")


def test_control_api_stores_a_3187_rank_and_refuses_what_it_cannot_take(lab):
    client = MooncakePlacements(lab["controlUrl"], next(iter(lab["loaderTokens"].values())))
    p = tp_placement(2)
    digest = client.import_rank(p, "r0", packed_bindings(p, "r0", f"params-{lab['run']}"))
    assert re.fullmatch("[0-9a-f]{64}", digest)
    # The same rank again is the same template.
    assert client.import_rank(p, "r0", packed_bindings(p, "r0", f"params-{lab['run']}")) == digest

    unbound = packed_bindings(p, "r1", "params")[1:]
    with pytest.raises(RelayCallError) as e:
        client.import_rank(p, "r1", unbound)
    assert e.value.status == 422
    assert e.value.type == PROBLEM_BASE + "mooncake-3187-inexpressible"
    assert "placement_fragment_id" in e.value.detail

    with pytest.raises(RelayCallError) as e:
        client.import_rank(p, "r1", [FragmentBinding("sha256:nope", "params", 0),
                                     *packed_bindings(p, "r1", "params")])
    assert e.value.status == 422 and "sha256:nope" in e.value.detail
