"""The SGLang adapter driven by SGLang 0.5.23's own weight-update classes (see sglang_tp.py) in
SGLang's call order, against the real lab: a TP 2 instance of the real Qwen2 and Llama model
classes on CPU, updated through ``begin_weight_update`` / ``update_weights_from_tensor`` (the
adapter's custom loader) / ``end_weight_update``. Every rank's parameters are compared byte for
byte with the same model class loaded by SGLang's ``DefaultModelLoader`` from a checkpoint of the
published weights (SGLang's own fusing and sharding). A load that fails (a shape mismatch) fails
the update, leaves the old weights on every rank and SGLang alive and accepting the next one."""

from __future__ import annotations

import importlib.util
import time
from pathlib import Path

import numpy as np
import pytest
import torch
from sglang_tp import EngineFront, TPInstance, checkpoint, config, write_model

from helpers import ranks
from weight_relay import (
    ControlClient,
    LoaderClient,
    Manifest,
    RelayCallError,
    UpdateFailedError,
    UpdateProgress,
    WeightLoadError,
    compat_worker,
    publish_generation,
)
from weight_relay.adapters import sglang as adapter

TP = 2


def _same(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> bool:
    """Equal raw bits of every parameter (the rank processes answer numpy bit arrays)."""
    return a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)


def _publish(lab, model: str, step: int, weights: dict[str, torch.Tensor]) -> tuple[Manifest, int]:
    control = ControlClient(lab["controlUrl"], lab["trainerToken"])
    m = Manifest.of_state_dict(model, weights, "bf16", max_fragment_bytes=4096)
    gen, _, _ = publish_generation(control, m, step, ranks(lab, control), lambda node: weights)
    return m, gen


class SessionOpened:
    """SGLang's engine as the adapter drives it, noting the loader's update phase each time the
    adapter opens SGLang's weight-update session (every call goes on to the engine)."""

    def __init__(self, engine, lc: LoaderClient) -> None:
        self.engine, self.lc, self.phases = engine, lc, []

    def begin_weight_update(self):
        current = self.lc.rest.call("GET", "/api/v1/updates/current", None, "current update")
        self.phases.append(current["phase"])
        return self.engine.begin_weight_update()

    def __getattr__(self, name):
        return getattr(self.engine, name)


def _recipe():
    path = Path(__file__).resolve().parents[3] / "recipes" / "gpu_sglang.py"
    spec = importlib.util.spec_from_file_location("gpu_sglang", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(params=["qwen2", "llama"])
def sglang_tp2(request, tmp_path):
    """A TP 2 SGLang instance of the family, started from a checkpoint of seed 0."""
    cfg = config(request.param)
    start = write_model(str(tmp_path / "start"), cfg, checkpoint(cfg, 0))
    inst = TPInstance(start, TP, [adapter.LOAD_FORMAT])
    try:
        yield request.param, cfg, inst, EngineFront(inst, start, TP)
    finally:
        inst.stop()


def test_adapter_uses_real_sglang():
    assert adapter.STANDIN is False
    from sglang.srt.runtime_context import get_parallel

    assert adapter._get_parallel is get_parallel


def test_tp2_update_in_sglang_session_each_rank_own_shards_failed_load_keeps_old(
        lab, tmp_path, sglang_tp2):
    family, cfg, inst, engine = sglang_tp2
    instance = lab["instances"][0]
    url, token = lab["services"]["loader-" + instance], lab["loaderTokens"][instance]
    lc = LoaderClient(url, token)
    node = lc.status().node
    model = f"py-{lab['run']}-sgl-{family}"
    group = f"py-{lab['run']}-sglang"
    dims = adapter.ModelDims.of(cfg)
    w1 = checkpoint(cfg, 1)
    m1, g1 = _publish(lab, model, 1, w1)
    relay = adapter.SGLangRelay(lc, url, token, instance, dims, m1, TP)
    relay.register(model, group, node, f"py-{lab['run']}-{instance}-sgl-{family}")
    before = inst.call("params")

    # SGLang refuses update_weights_from_tensor outside a session (why the adapter opens one).
    ok, message = engine.update_weights_from_tensor(
        [(relay.ticket().encode(), torch.empty(0))], load_format=adapter.LOAD_FORMAT)
    assert not ok and "begin_weight_update" in message
    assert all(_same(a, b) for a, b in zip(inst.call("params"), before, strict=True))
    assert all(inst.alive())

    progress = relay.update(engine, g1)
    assert progress.generation == g1
    got = inst.call("params")
    want = inst.call("reference", write_model(str(tmp_path / "g1"), cfg, w1))
    for r in range(TP):
        assert _same(got[r], want[r]), f"rank {r} does not hold its shards of generation {g1}"
        assert not _same(got[r], before[r])
    # Each rank its own shards: the split parameters differ between the ranks.
    qkv = "model.layers.0.self_attn.qkv_proj.weight"
    assert not np.array_equal(got[0][qkv], got[1][qkv])
    assert not np.array_equal(got[0]["model.embed_tokens.weight"],
                              got[1]["model.embed_tokens.weight"])

    if family == "llama":  # what the GPU recipe expects get_weights_by_name to answer
        recipe = _recipe()
        for name, t in w1.items():
            if "k_proj" in name or "v_proj" in name:
                continue  # SGLang's Llama.get_weights_by_name cannot narrow replicated kv heads
            answer = inst.call("weights_by_name", name, recipe.TRUNCATE)[0]
            expect = recipe.expected_view(name, t.to(torch.bfloat16), TP, cfg)
            assert answer == expect, f"the GPU recipe's expectation of {name} is wrong"

    # A published model whose vocabulary is not the served one's: the transfer succeeds, the
    # load does not (a shape mismatch on every rank). The update fails, SGLang stays up.
    cfg_big = dict(cfg, vocab_size=cfg["vocab_size"] + 150)
    wide = f"{model}-wide"
    m2, g2 = _publish(lab, wide, 1, checkpoint(cfg_big, 2))
    wrong = adapter.SGLangRelay(lc, url, token, instance, adapter.ModelDims.of(cfg_big), m2, TP)
    wrong.register(wide, group, node, f"py-{lab['run']}-{instance}-sgl-{family}-w")
    with pytest.raises(WeightLoadError, match="embed_tokens") as failed:
        wrong.update(engine, g2)
    assert sorted(failed.value.ranks) == list(range(TP))
    assert all(inst.alive())
    for r, held in enumerate(inst.call("params")):
        assert _same(held, want[r]), f"rank {r} lost generation {g1} after a failed load"

    # SGLang accepts the next update: the served model's next generation.
    relay.register(model, group, node, f"py-{lab['run']}-{instance}-sgl-{family}")
    w3 = checkpoint(cfg, 3)
    _, g3 = _publish(lab, model, 3, w3)
    relay.update(engine, g3)
    want3 = inst.call("reference", write_model(str(tmp_path / "g3"), cfg, w3))
    for r, held in enumerate(inst.call("params")):
        assert _same(held, want3[r]), f"rank {r} does not hold generation {g3}"

    # The compat image through SGLang's own update_weights_from_disk (DefaultModelLoader reads the
    # directory whose one model.safetensors links to the image in shared memory; each rank
    # shards it itself).
    compat = compat_worker(f"{instance}-sglc", node, f"py-{lab['run']}-{instance}-sglc-{family}",
                           Manifest.of_state_dict(model, w3, "bf16", max_fragment_bytes=4096),
                           rank=TP)
    relay.register(model, group, node, f"py-{lab['run']}-{instance}-sgl-{family}", [compat])
    w5 = checkpoint(cfg, 5)
    _, g5 = _publish(lab, model, 5, w5)
    lc.update(g5)
    ok, message = engine.update_weights_from_disk(
        adapter.disk_directory(lc, compat["workerId"], str(tmp_path / "disk")))
    assert ok, message
    want5 = inst.call("reference", write_model(str(tmp_path / "g5"), cfg, w5))
    for r, held in enumerate(inst.call("params")):
        assert _same(held, want5[r]), f"rank {r} does not hold generation {g5} from the image"

    # Registered staged: the transfer is a fetch while SGLang serves (the update waits at FETCHED
    # when the adapter opens SGLang's session), the install runs inside the session, and each rank
    # loads its serving copy. A fetch that fails never opens the session.
    relay.register(model, group, node, f"py-{lab['run']}-{instance}-sgl-{family}",
                   direct_install="staged")
    w6 = checkpoint(cfg, 6)
    _, g6 = _publish(lab, model, 6, w6)
    seen = SessionOpened(engine, lc)
    staged = relay.update(seen, g6)
    assert seen.phases == ["FETCHED"]
    assert staged.updated and staged.pause_s == staged.install_s
    want6 = inst.call("reference", write_model(str(tmp_path / "g6"), cfg, w6))
    for r, held in enumerate(inst.call("params")):
        assert _same(held, want6[r]), f"rank {r} does not hold generation {g6}, staged"
    seen.phases.clear()
    with pytest.raises((RelayCallError, UpdateFailedError)):
        relay.update(seen, g6 + 1000)
    assert seen.phases == [] and not lc.status().paused
    for r, held in enumerate(inst.call("params")):
        assert _same(held, want6[r]), f"rank {r} lost generation {g6} after a failed fetch"

    # SGLang refuses a second weight-update session while one is open. Staged, the update is
    # fetched by then: the adapter declines it, so it ends RESUMED_OLD at once naming SGLang's
    # answer (not at its 300 s deadline, holding the group), and SGLang keeps generation 6. Past
    # the group's applied barrier the group's session ends PAUSED_REBUILD, so once SGLang's
    # session closes the instance registers again and then loads that generation.
    ok, message = engine.begin_weight_update()
    assert ok, message
    w7 = checkpoint(cfg, 7)
    _, g7 = _publish(lab, model, 7, w7)
    started = time.monotonic()
    with pytest.raises(WeightLoadError, match="already open"):
        relay.update(engine, g7, timeout_s=300)
    assert time.monotonic() - started < 120, "declined, not ended by the 300 s deadline"
    ended = UpdateProgress.from_json(
        lc.rest.call("GET", "/api/v1/updates/current", None, "current update"))
    assert (ended.generation, ended.outcome) == (g7, "RESUMED_OLD")
    assert "declined to install" in ended.error and "already open" in ended.error
    assert not lc.status().paused
    ok, message = engine.end_weight_update()
    assert ok, message
    for r, held in enumerate(inst.call("params")):
        assert _same(held, want6[r]), f"rank {r} lost generation {g6} after a declined update"
    relay.register(model, group, node, f"py-{lab['run']}-{instance}-sgl-{family}",
                   direct_install="staged")
    assert relay.update(engine, g7).updated
    want7 = inst.call("reference", write_model(str(tmp_path / "g7"), cfg, w7))
    for r, held in enumerate(inst.call("params")):
        assert _same(held, want7[r]), f"rank {r} does not hold generation {g7} after the decline"

    relay.register(model, group, node, f"py-{lab['run']}-{instance}-sgl-{family}", [compat])
    want5 = want7

    # A model that differs on one rank only: no rank copies anything (all or none).
    inst.call_rank(1, "break_param", "model.norm.weight")
    _, g4 = _publish(lab, model, 4, checkpoint(cfg, 4))
    with pytest.raises(WeightLoadError, match=r"model\.norm\.weight") as one:
        relay.update(engine, g4)
    assert "another TP rank" in one.value.ranks[0] and "norm" in one.value.ranks[1]
    held0 = inst.call_rank(0, "params")
    assert _same(held0, want5[0])
    assert all(inst.alive())
    lc.close()
