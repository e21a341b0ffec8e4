"""Each adapter driven in its framework's own call order, through the framework's real classes
where it imports here and otherwise through the stand-ins of weight_relay.adapters._standin
(python/README.md says which and why), including a failed update that leaves the old weights."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from safetensors import safe_open

from helpers import PAD, SPLIT, bits, engines, expected, manifest, mapping_range, ranks, state_dict
from weight_relay import (
    ControlClient,
    PublishFailedError,
    RelayCallError,
    UpdateFailedError,
    compat_worker,
    direct_worker,
    publish_generation,
    tensor_parallel_fragments,
)
from weight_relay.adapters import _standin


class Model:
    """An engine's model: named parameters and vLLM's ``load_weights(weights)``."""

    def __init__(self, shapes: dict[str, tuple[tuple[int, ...], torch.dtype]]) -> None:
        self.p = {n: torch.zeros(s, dtype=d) for n, (s, d) in shapes.items()}

    def named_parameters(self):
        return list(self.p.items())

    def named_buffers(self):
        return []

    def load_weights(self, weights):
        loaded = set()
        for name, t in weights:
            self.p[name].copy_(t)
            loaded.add(name)
        return loaded


# Each adapter test publishes a model of its own, so the same engines see generation 1 of several
# models in turn (the loaders' fan-out notify names once carried only the generation and
# instance, and the second model's generation 1 then ended PAUSED_REBUILD).
def _publish(lab, model: str, step: int, seed: int):
    control = ControlClient(lab["controlUrl"], lab["trainerToken"])
    m = manifest(model)
    sd = state_dict(seed)
    gen, _, _ = publish_generation(control, m, step, ranks(lab, control), lambda node: sd)
    return m, sd, gen


def _equal(a: dict, b: dict) -> bool:
    return all(np.array_equal(bits(a[k]), bits(b[k])) for k in b)


# ---- vLLM ----------------------------------------------------------------------------------
def test_vllm_engine_through_factory_with_failed_update(lab, tmp_path):
    from weight_relay.adapters import vllm as adapter

    model_name = f"py-{lab['run']}-vllm"
    m, sd, g1 = _publish(lab, model_name, 1, 11)
    want = expected(sd)
    adapter.register()  # what the vllm.general_plugins entry point runs
    instance, lc = engines(lab)[0]
    node = lc.status().node
    worker = compat_worker(f"{instance}-vllm0", node, f"py-{lab['run']}-{instance}-vllm", m)
    model = Model({n: (tuple(t.shape), t.dtype) for n, t in want.items()})
    engine = adapter.WeightTransferEngineFactory.create_engine(
        SimpleNamespace(backend="weight_relay"),
        SimpleNamespace(parallel_config=None, model_config=None), torch.device("cpu"), model)
    assert isinstance(engine, adapter.WeightRelayTransferEngine)
    engine.init_transfer_engine(engine.parse_init_info(dict(
        loader_url=lab["services"]["loader-" + instance], token=lab["loaderTokens"][instance],
        instance_id=instance, model=model_name, group=f"py-{lab['run']}-vllm", node=node,
        worker_id=worker["workerId"], register=True, workers=[worker])))

    class Client:  # the engine's weight-sync control plane, as the trainer sees it
        def start_weight_update(self):
            engine.start_weight_update()

        def update_weights(self, info):
            engine.update_weights(info)

        def finish_weight_update(self, weight_version=None):
            engine.finish_weight_update()
            self.version = weight_version

    client = Client()
    adapter.sync(client, g1)
    assert client.version == str(g1) == engine.weight_version
    assert _equal(model.p, want)

    # A failed update (a generation that does not exist) leaves the old weights everywhere.
    engine.start_weight_update()
    with pytest.raises((RelayCallError, UpdateFailedError)):
        engine.update_weights({"generation": g1 + 1000})
    engine.finish_weight_update()
    assert engine.weight_version == str(g1)
    assert _equal(model.p, want)
    assert _equal(lc.compat_tensors(worker["workerId"]), want)

    # The compat image as vLLM's disk backend reads it: a directory with one *.safetensors.
    from weight_relay.adapters import image_directory

    d = image_directory(lc, worker["workerId"], str(tmp_path / "model"))
    files = [f for f in os.listdir(d) if f.endswith(".safetensors")]
    assert files == ["model.safetensors"]
    with safe_open(os.path.join(d, files[0]), framework="pt") as f:
        assert _equal({k: f.get_tensor(k) for k in f.keys()}, want)
    engine.shutdown()


def test_vllm_real_or_standin_is_named():
    from weight_relay.adapters import vllm as adapter

    base = adapter.WeightRelayTransferEngine.__mro__[1]
    assert adapter.STANDIN == getattr(base, "STANDIN", False)
    if adapter.STANDIN:
        assert base.__module__ == "weight_relay.adapters._standin"
    else:
        assert base.__module__ == "vllm.distributed.weight_transfer.base"


def test_package_installs_offline_with_the_vllm_entry_point(tmp_path):
    root = Path(__file__).resolve().parents[1]
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps",
                    "--disable-pip-version-check", "--target", str(tmp_path / "t"), str(root)],
                   check=True, timeout=300)
    ep = next((tmp_path / "t").glob("weight_relay-*.dist-info")) / "entry_points.txt"
    text = ep.read_text()
    assert "[vllm.general_plugins]" in text and "weight_relay.adapters.vllm:register" in text
    assert (tmp_path / "t" / "weight_relay" / "adapters" / "verl.py").is_file()


# ---- VeRL ----------------------------------------------------------------------------------
def test_verl_real_classes_where_verl_is_installed():
    """The CI venv installs VeRL (requirements.txt): there the adapter must be on VeRL's own
    CheckpointEngine and registry, not the stand-in."""
    import importlib.util

    from weight_relay.adapters import verl as adapter

    if importlib.util.find_spec("verl") is None:
        assert adapter.STANDIN and adapter.CheckpointEngineRegistry.STANDIN
        return
    import verl.checkpoint_engine.base as base

    assert not adapter.STANDIN
    assert adapter.CheckpointEngineRegistry is base.CheckpointEngineRegistry
    assert issubclass(adapter.WeightRelayCheckpointEngine, base.CheckpointEngine)
    assert base.CheckpointEngineRegistry.get("weight_relay") is adapter.WeightRelayCheckpointEngine


def test_verl_backend_send_receive_with_failed_publish(lab):
    from weight_relay.adapters import verl as adapter

    if adapter.STANDIN:  # VeRL does not import here: the stand-in
        import_external_libs = _standin.import_external_libs
    else:
        from verl.utils.import_utils import import_external_libs
    import_external_libs("weight_relay.adapters.verl")  # checkpoint_engine.custom_backend_module
    registry = adapter.CheckpointEngineRegistry
    assert registry.get("weight_relay") is adapter.WeightRelayCheckpointEngine

    model_name = f"py-{lab['run']}-verl"
    m = manifest(model_name)
    pubs = [u for n, u in lab["services"].items() if n.startswith("publisher-")]
    barrier = threading.Barrier(2)
    actors = [registry.new("weight_relay", bucket_size=1 << 20, control_url=lab["controlUrl"],
                           token=lab["trainerToken"], manifest=m.to_json(), publisher_url=u,
                           barrier=barrier.wait) for u in pubs]
    instance, lc0 = engines(lab)[1]
    node = lc0.status().node
    worker = compat_worker(f"{instance}-verl0", node, f"py-{lab['run']}-{instance}-verl", m)
    rollout = registry.new("weight_relay", bucket_size=1 << 20,
                           loader_url=lab["services"]["loader-" + instance],
                           token=lab["loaderTokens"][instance], instance_id=instance,
                           worker_id=worker["workerId"],
                           registration={"model": model_name, "group": f"py-{lab['run']}-verl",
                                         "node": node, "workers": [worker]})
    metadata = [a.prepare() for a in actors] + [rollout.prepare()]
    actor_kw, rollout_kw = registry.get("weight_relay").build_topology(2, 1, metadata)
    for i, a in enumerate(actors):
        a.init_process_group(**{k: v[i] for k, v in actor_kw.items()})
    rollout.init_process_group(**{k: v[0] for k, v in rollout_kw.items()})

    def send_all(sd, step):
        errors = []

        def run(a):
            def weights():  # every rank's generator, drained on every rank
                yield from sd.items()

            try:
                asyncio.run(a.send_weights(weights(), global_steps=step))
            except Exception as e:
                errors.append(e)

        ts = [threading.Thread(target=run, args=(a,)) for a in actors]
        [t.start() for t in ts]
        [t.join() for t in ts]
        return errors

    async def receive():
        return [(n, t) async for n, t in rollout.receive_weights(global_steps=5)]

    sd = state_dict(21)
    assert send_all(sd, 5) == []
    got = asyncio.run(receive())
    want = expected(sd)
    assert [n for n, _ in got] == list(want)
    mm, base, size, _ = rollout.loader.buffer_map(worker["workerId"])  # the mapping it handed out
    lo, _ = mapping_range(mm)
    for n, t in got:
        assert np.array_equal(bits(t), bits(want[n])), n
        if t.numel():
            assert lo + base <= t.data_ptr() < lo + base + size  # zero copy
    first = rollout.generation

    bad = dict(state_dict(22))
    bad["big"] = torch.zeros(2048, 4)
    errors = send_all(bad, 6)
    assert errors and all(isinstance(e, PublishFailedError) for e in errors), errors
    got = asyncio.run(receive())  # the failed publish changed nothing: the old weights
    assert rollout.generation == first
    assert all(np.array_equal(bits(t), bits(want[n])) for n, t in got)
    for a in [*actors, rollout]:
        a.finalize()


# ---- SGLang --------------------------------------------------------------------------------
def test_sglang_custom_loader_direct_and_disk_with_failed_load(lab, tmp_path):
    from weight_relay.adapters import sglang as adapter

    model_name = f"py-{lab['run']}-sglang"
    m, sd, g1 = _publish(lab, model_name, 1, 31)
    want = expected(sd)
    instance, lc = engines(lab)[0]
    node = lc.status().node
    workers = [direct_worker(f"{instance}-sgl{r}", node, f"py-{lab['run']}-{instance}-sgl{r}", m,
                             tensor_parallel_fragments(m, 2, r, SPLIT, pad_rows=PAD), rank=r)
               for r in range(2)]
    workers.append(compat_worker(f"{instance}-sglc", node, f"py-{lab['run']}-{instance}-sglc", m,
                                 rank=2))
    lc.register(instance, model_name, f"py-{lab['run']}-sglang", node, workers)
    lc.update(g1)
    for r in range(2):
        named = adapter.direct_named_tensors(lc, f"{instance}-sgl{r}", m)
        shards = {}
        for f in workers[r]["fragments"]:
            idx = tuple(slice(o, o + s) for o, s in zip(f["offset"], f["shape"], strict=True))
            shards[f["tensor"]] = want[f["tensor"]][idx]
        tp_model = Model({n: (tuple(t.shape), t.dtype) for n, t in shards.items()})
        if adapter.STANDIN:
            ok, _ = _standin.sglang_update_weights_from_tensor(
                tp_model, named, adapter.LOAD_FORMAT, [adapter.LOAD_FORMAT])
            assert ok
        else:  # pragma: no cover - SGLang does not import here
            adapter.load_direct(tp_model, named)
        assert _equal(tp_model.p, shards)
        # A failing load (a shape the model does not have) changes no parameter.
        broken = Model({n: (tuple(t.shape), t.dtype) for n, t in shards.items()})
        broken.p["norm.bias"] = torch.zeros(14)
        before = {k: v.clone() for k, v in broken.p.items()}
        with pytest.raises(ValueError, match=r"norm\.bias"):
            adapter.load_direct(broken, named)
        assert _equal(broken.p, before)
    d = adapter.disk_directory(lc, f"{instance}-sglc", str(tmp_path / "sgl"))
    with safe_open(os.path.join(d, "model.safetensors"), framework="pt") as f:
        assert _equal({k: f.get_tensor(k) for k in f.keys()}, want)
