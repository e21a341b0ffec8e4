"""A torch state dict from two trainer ranks through the real lab, read back from two engines in
both modes, bit-exact after conversion, every tensor a view of the shared mapping."""

from __future__ import annotations

import time

import numpy as np
import pytest
import torch
from safetensors import safe_open

from helpers import PAD, SPLIT, bits, engines, expected, manifest, mapping_range, ranks, state_dict
from weight_relay import (
    ConflictError,
    ControlClient,
    LoaderClient,
    SafetensorsLayout,
    UpdateFailedError,
    UpdateInFlightError,
    compat_worker,
    direct_worker,
    publish_generation,
    tensor_parallel_fragments,
)


@pytest.fixture(scope="module")
def published(lab):
    model = f"py-{lab['run']}"
    control = ControlClient(lab["controlUrl"], lab["trainerToken"])
    m = manifest(model)
    sd = state_dict(1)
    rank_clients = ranks(lab, control)
    assert len(rank_clients) == 2
    gen, results, _ = publish_generation(control, m, 1, rank_clients, lambda node: sd)
    assert all(r.ok for r in results), results
    # both ranks published a share, each only what its node is assigned
    assert all(r.batches >= 1 for r in results), results
    assert control.active(model)["generation"] == gen
    return {"model": model, "manifest": m, "sd": sd, "generation": gen, "control": control}


def _register(lab, published, mode: str) -> list[tuple[str, LoaderClient, list[dict]]]:
    out = []
    m = published["manifest"]
    for instance, lc in engines(lab):
        node = lc.status().node
        seg = f"py-{lab['run']}-{instance}-{mode}"
        if mode == "compat":
            workers = [compat_worker(f"{instance}-c0", node, seg, m)]
        else:
            workers = [direct_worker(f"{instance}-d{r}", node, f"{seg}{r}", m,
                                     tensor_parallel_fragments(m, 2, r, SPLIT, pad_rows=PAD),
                                     rank=r) for r in range(2)]
        lc.register(instance, published["model"], f"py-{lab['run']}-{mode}", node, workers)
        out.append((instance, lc, workers))
    return out


def _update_all(engs, generation):
    import threading

    errors = []

    def run(lc):
        try:
            lc.update(generation)
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=run, args=(lc,)) for _, lc, _ in engs]
    [t.start() for t in threads]
    [t.join() for t in threads]
    assert not errors, errors


def test_compat_two_engines_bit_exact_zero_copy(lab, published):
    engs = _register(lab, published, "compat")
    _update_all(engs, published["generation"])
    want = expected(published["sd"])
    for _instance, lc, workers in engs:
        wid = workers[0]["workerId"]
        assert lc.status().generation == published["generation"]
        m, base, size, _ = lc.buffer_map(wid)
        lo, hi = mapping_range(m)
        assert size == SafetensorsLayout.of(published["manifest"]).image_bytes
        tensors = lc.compat_tensors(wid, framework="torch")
        assert list(tensors) == list(want)
        for name, t in tensors.items():
            assert t.dtype == want[name].dtype and tuple(t.shape) == tuple(want[name].shape)
            assert np.array_equal(bits(t), bits(want[name])), name
            if t.numel():
                assert lo + base <= t.data_ptr() and t.data_ptr() + t.nbytes <= lo + base + size
        for name, a in lc.compat_tensors(wid, framework="numpy").items():
            assert np.array_equal(bits(a), bits(want[name])), name
            assert lo <= a.ctypes.data < hi  # a view, not a copy
            assert not a.flags.owndata


def test_compat_image_opens_with_real_safetensors(lab, published):
    want = expected(published["sd"])
    for instance, lc in engines(lab):
        st = lc.status()
        if st.workers[0]["mode"] != "compat":
            _register(lab, published, "compat")
            _update_all([(instance, lc, None)], published["generation"])
        path = lc.image_file(f"{instance}-c0")
        with safe_open(path, framework="pt") as f:
            assert sorted(f.keys()) == sorted(want)
            for name in f.keys():
                assert np.array_equal(bits(f.get_tensor(name)), bits(want[name])), name
        with safe_open(path, framework="numpy") as f:
            for name in f.keys():
                if want[name].dtype == torch.bfloat16:
                    continue  # numpy has no bf16 (safetensors refuses it); the torch pass did
                a = f.get_tensor(name)
                assert np.array_equal(bits(a), bits(want[name])), name


def test_direct_two_engines_tp2_strided_views(lab, published):
    engs = _register(lab, published, "direct")
    _update_all(engs, published["generation"])
    want = expected(published["sd"])
    m = published["manifest"]
    for _instance, lc, workers in engs:
        for w in workers:
            views = lc.direct_tensors(w["workerId"], framework="torch", manifest=m)
            assert len(views) == len(m.tensors)
            for f, t in views:
                idx = tuple(slice(o, o + s) for o, s in zip(f["offset"], f["shape"], strict=True))
                assert tuple(t.stride()) == tuple(s // t.element_size() for s in f["strides"])
                assert np.array_equal(bits(t), bits(want[f["tensor"]][idx])), f["tensor"]
                mm, base, size, _ = lc.buffer_map(w["workerId"], f["bufferId"])
                lo, _ = mapping_range(mm)
                if t.numel():
                    assert lo + base <= t.data_ptr() < lo + base + size
            for f, a in lc.direct_tensors(w["workerId"], framework="numpy", manifest=m):
                idx = tuple(slice(o, o + s) for o, s in zip(f["offset"], f["shape"], strict=True))
                assert a.strides == tuple(f["strides"]) or a.size <= 1
                assert np.array_equal(bits(a), bits(want[f["tensor"]][idx])), f["tensor"]
    # the padded tensor really is strided in the buffer
    f0 = next(f for f in engs[0][2][0]["fragments"] if f["tensor"] == "layers.0.up")
    assert f0["strides"][0] == (f0["shape"][1] + PAD["layers.0.up"]) * 2


def test_compat_tensors_refused_while_an_update_is_in_flight(lab, published):
    """Views of the compat image are not handed out while an update of the instance may be
    writing it: one engine's update waits at the group's barrier for the other, and meanwhile
    compat_tensors of the first is refused naming the update; once both ended, views are given."""
    engs = _register(lab, published, "compat")
    _update_all(engs, published["generation"])
    control = published["control"]
    sd2 = state_dict(2)
    gen2, results, _ = publish_generation(control, published["manifest"], 2, ranks(lab, control),
                                          lambda node: sd2)
    assert all(r.ok for r in results), results
    (_, first, workers), (_, second, _) = engs
    wid = workers[0]["workerId"]
    started = first.start_update(gen2, 120)
    assert first.progress(started.update_id).running  # waits for the second engine
    with pytest.raises(UpdateInFlightError) as refused:
        first.compat_tensors(wid, framework="numpy")
    assert refused.value.update_id == started.update_id
    assert refused.value.generation == gen2
    assert started.update_id in str(refused.value)
    second.update(gen2, 120)
    assert first.wait(started.update_id, 180).updated
    want = expected(sd2)
    for name, a in first.compat_tensors(wid, framework="numpy").items():
        assert np.array_equal(bits(a), bits(want[name])), name


def test_a_declined_fetch_ends_at_once_and_the_generation_loads_after_registering_again(
        lab, published):
    """An engine that cannot take a fetched update declines it: the update ends RESUMED_OLD at
    once (not at its 300 s deadline) naming the engine's reason, the engine never paused. Past the
    group's applied barrier the group's session ends PAUSED_REBUILD (another member may have
    installed), so preparing that generation again is refused naming why, until the engine
    registers again; then it fetches and installs, bit-exact."""
    instance, lc = engines(lab)[0]
    node = lc.status().node
    wid = f"{instance}-decline"
    workers = [compat_worker(wid, node, f"py-{lab['run']}-{instance}-decline",
                             published["manifest"])]
    group = f"py-{lab['run']}-decline"
    lc.register(instance, published["model"], group, node, workers)
    gen = published["generation"]
    fetched = lc.fetch(gen, 300)
    assert fetched.fetched
    started = time.monotonic()
    ended = lc.decline(fetched.update_id, "the engine's weight-update session is busy")
    assert time.monotonic() - started < 60, "declined, not ended by the 300 s deadline"
    assert (ended.generation, ended.outcome) == (gen, "RESUMED_OLD")
    assert "declined to install" in ended.error and "session is busy" in ended.error
    assert not lc.status().paused
    with pytest.raises(ConflictError, match="declined"):
        lc.install(fetched.update_id, 60)

    with pytest.raises(UpdateFailedError) as refused:
        lc.fetch(gen, 300)
    assert refused.value.progress.outcome == "RESUMED_OLD"
    assert "ended PAUSED_REBUILD" in str(refused.value) and "session is busy" in str(refused.value)
    assert f"register loader {instance} again" in str(refused.value)

    lc.register(instance, published["model"], group, node, workers)
    again = lc.fetch(gen, 300)
    assert again.update_id != fetched.update_id and again.fetched
    assert lc.install(again.update_id, 300).updated
    want = expected(published["sd"])
    for name, a in lc.compat_tensors(wid, framework="numpy").items():
        assert np.array_equal(bits(a), bits(want[name])), name
