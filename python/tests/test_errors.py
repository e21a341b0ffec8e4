"""Typed errors carry the services' problem+json; a failed publish leaves the previous
generation active; every rank still finishes."""

from __future__ import annotations

import pytest
import torch

from helpers import manifest, ranks, state_dict
from weight_relay import (
    BadRequestError,
    ConflictError,
    ControlClient,
    LoaderClient,
    Manifest,
    NotFoundError,
    PublisherClient,
    PublishFailedError,
    RelayCallError,
    UnauthorizedError,
    UnavailableError,
    publish_generation,
)
from weight_relay.errors import PROBLEM_BASE


def test_unknown_token_is_unauthorized_with_problem_fields(lab):
    c = ControlClient(lab["controlUrl"], "not-a-token")
    with pytest.raises(UnauthorizedError) as e:
        c.open_generation(manifest(f"py-{lab['run']}-x"), 1, ["trainer-0000"])
    assert e.value.status == 401
    assert e.value.type.startswith(PROBLEM_BASE) and e.value.title
    assert isinstance(e.value, RelayCallError)


def test_bad_manifest_is_a_bad_request_naming_the_problem(lab):
    c = ControlClient(lab["controlUrl"], lab["trainerToken"])
    m = manifest(f"py-{lab['run']}-bad")
    body = m.to_json()
    body["maxFragmentBytes"] = 1  # below the contract's minimum
    with pytest.raises(BadRequestError) as e:
        c.rest.call("POST", f"/api/v1/models/{m.model}/generations",
                    {"trainerStep": 1, "manifest": body,
                     "trainerTopology": {"nodes": [{"name": "n", "nics": [{"name": "nic0",
                                                                           "gbps": 1.0}]}]}})
    assert e.value.status == 400 and e.value.slug and e.value.detail


def test_unknown_generation_is_not_found(lab):
    c = ControlClient(lab["controlUrl"], lab["trainerToken"])
    with pytest.raises(NotFoundError) as e:
        c.generation(f"py-{lab['run']}-none", 424242)
    assert e.value.status == 404 and e.value.type.startswith(PROBLEM_BASE)


def test_no_answer_is_unavailable():
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    with pytest.raises(UnavailableError) as e:
        LoaderClient(f"http://127.0.0.1:{port}", timeout=2).status()
    assert e.value.status == 0 and e.value.slug == "no-answer"


def test_failed_rank_aborts_and_previous_generation_stays(lab):
    model = f"py-{lab['run']}-fail"
    control = ControlClient(lab["controlUrl"], lab["trainerToken"])
    m = manifest(model)
    rank_clients = ranks(lab, control)
    good = state_dict(3)
    gen, _, _ = publish_generation(control, m, 1, rank_clients, lambda node: good)
    bad = dict(good)
    bad["layers.0.qkv"] = torch.zeros(3, 5, 8, dtype=torch.bfloat16)  # wrong shape on its rank
    with pytest.raises(PublishFailedError) as e:
        publish_generation(control, m, 2, rank_clients, lambda node: bad)
    assert "layers.0.qkv" in str(e.value)
    assert control.active(model)["generation"] == gen
    # the generation that failed is not active, and cannot be committed any more
    with pytest.raises(RelayCallError) as e2:
        control.commit(model, e.value.generation)
    assert e2.value.status in (404, 409)


def test_walk_out_of_order_is_refused(lab):
    control = ControlClient(lab["controlUrl"], lab["trainerToken"])
    m = manifest(f"py-{lab['run']}-order")
    client = next(iter(ranks(lab, control).values()))
    opened = control.open_generation(m, 1, ranks(lab, control).keys())
    walk = client.begin(m, opened)
    with pytest.raises(ValueError, match="out of manifest order"):
        walk.add(m.tensors[1].name, None)
    control.abort(m.model, opened.generation, "test")


def test_manifest_rejects_duplicates_and_unknown_dtypes():
    from weight_relay import TensorSpec

    with pytest.raises(ValueError, match="twice"):
        Manifest("m", [TensorSpec("a", (1,), "fp32", "fp32"),
                       TensorSpec("a", (1,), "fp32", "fp32")])
    with pytest.raises(ValueError, match="unknown dtype"):
        TensorSpec("a", (1,), "fp64", "fp32")
    with pytest.raises(ValueError, match="ambiguous"):
        import numpy as np

        Manifest.of_state_dict("m", {"a": np.zeros(3, np.uint16)})


def test_staging_must_be_mappable(lab, tmp_path):
    c = PublisherClient(next(u for n, u in lab["services"].items() if n.startswith("publisher-")),
                        lab["trainerToken"])
    info = c.staging_info()
    assert info["path"] and int(info["fileSize"]) > 0
    c._info = dict(info, path=str(tmp_path / "missing"))
    with pytest.raises(OSError, match="publisher's node"):
        c.staging_map()


def test_conflict_error_type():
    assert issubclass(ConflictError, RelayCallError)


def test_direct_tensors_need_the_dtypes():
    # registered fragments carry no dtype; a stride width would type a 0-d fp32 tensor as bf16
    with pytest.raises(ValueError, match="manifest="):
        LoaderClient("http://127.0.0.1:1").direct_tensors("w0")


class _FragmentedStaging:
    """The publisher's reservation endpoint as staging with holes of ``hole`` bytes answers:
    429 with Retry-After-Ms above that, a reservation at or below it."""

    def __init__(self, hole: int) -> None:
        self.hole = hole
        self.asked: list[int] = []
        self.base_url = "http://publisher.invalid"

    def raw(self, method, path, body, what):
        from weight_relay._http import Response
        self.asked.append(body["bytes"])
        if body["bytes"] > self.hole:
            problem = b'{"type":"' + PROBLEM_BASE.encode() + b'staging-full","status":429}'
            return Response(429, {"retry-after-ms": "10"}, problem)
        return Response(201, {}, b'{"reservationId":"r1","offset":0,"size":%d}' % body["bytes"])


def test_fragmented_staging_takes_a_batch_in_smaller_reservations():
    from weight_relay.errors import StagingFullError
    c = PublisherClient("http://publisher.invalid", "t", reserve_timeout=0.2)
    c.rest = _FragmentedStaging(hole=512 << 10)
    r = c.reserve(1 << 20, "m", 1, min_bytes=256 << 10)
    assert r.size == 512 << 10
    assert c.rest.asked == [1 << 20, 512 << 10]

    # Not below what the next write needs: it waits out the timeout and names both sizes.
    c.rest = _FragmentedStaging(hole=512 << 10)
    with pytest.raises(StagingFullError, match=r"reserve 786432 bytes \(of 1048576 wanted\)"):
        c.reserve(1 << 20, "m", 1, min_bytes=768 << 10)
    assert set(c.rest.asked) == {1 << 20, 768 << 10}
