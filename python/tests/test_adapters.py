"""Each adapter driven in its framework's own call order, through the framework's real classes
where it imports here and otherwise through the stand-ins of weight_relay.adapters._standin
(python/README.md says which and why), including a failed update that leaves the old weights."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from safetensors import safe_open

from helpers import bits, engines, expected, manifest, ranks, state_dict
from verl_cluster import (
    ActorRank,
    Proc,
    ProcWorkerGroup,
    Replica,
    WorkerError,
    engine_kwargs,
    free_port,
    ray_get,
    rollout_worker,
)
from weight_relay import (
    ControlClient,
    LoaderClient,
    Manifest,
    RelayCallError,
    UpdateFailedError,
    UpdateTimeoutError,
    UsageError,
    WeightLoadError,
    compat_worker,
    publish_generation,
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


def _current(lc: LoaderClient) -> dict:
    """The instance's current (or last) update, as the loader answers it."""
    return lc.rest.call("GET", "/api/v1/updates/current", None, "current update")


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
        seen: list[str] | None = None  # a list: the loader's update phase at each start

        def start_weight_update(self):
            if self.seen is not None:
                self.seen.append(_current(lc)["phase"])
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
    # vLLM's Worker ends the session when update_weights raises (it refuses finish_weight_update
    # then), so the next call is the next update's start_weight_update, which is accepted.
    engine.start_weight_update()
    with pytest.raises((RelayCallError, UpdateFailedError)):
        engine.update_weights({"generation": g1 + 1000})
    assert engine.weight_version == str(g1)
    assert _equal(model.p, want)
    assert _equal(lc.compat_tensors(worker["workerId"]), want)
    adapter.sync(client, g1)
    assert client.version == str(g1) == engine.weight_version
    assert _equal(model.p, want)

    # The compat image as vLLM's disk backend reads it: a directory with one *.safetensors.
    from weight_relay.adapters import image_directory

    d = image_directory(lc, worker["workerId"], str(tmp_path / "model"))
    files = [f for f in os.listdir(d) if f.endswith(".safetensors")]
    assert files == ["model.safetensors"]
    with safe_open(os.path.join(d, files[0]), framework="pt") as f:
        assert _equal({k: f.get_tensor(k) for k in f.keys()}, want)

    # With the loader, sync fetches while vLLM serves: no weight-sync call until every loader of
    # the group fetched (FETCHED), then update_weights only installs, and is all of the pause.
    _, sd2, g2 = _publish(lab, model_name, 2, 12)
    want2 = expected(sd2)
    client.seen = []
    adapter.sync(client, g2, loader=lc)
    assert client.seen == ["FETCHED"]
    assert client.version == str(g2) == engine.weight_version
    assert _equal(model.p, want2)
    done = lc.progress(_current(lc)["updateId"])
    assert done.updated and done.pause_s == done.install_s
    # A fetch that fails raises before vLLM is asked anything: it never paused.
    client.seen = []
    with pytest.raises((RelayCallError, UpdateFailedError)):
        adapter.sync(client, g2 + 1000, loader=lc)
    assert client.seen == [] and engine.weight_version == str(g2) and _equal(model.p, want2)
    assert not lc.status().paused

    # vLLM failing after the fetch, before its driving rank asked to install: sync declines the
    # fetched update, which ends RESUMED_OLD at once naming vLLM's error (not at its deadline),
    # vLLM's weights untouched; the instance registers again before it loads that generation.
    _, sd3, g3 = _publish(lab, model_name, 3, 13)

    class Refusing(Client):
        def start_weight_update(self):
            raise RuntimeError("vLLM is shutting down")

    started = time.monotonic()
    with pytest.raises(RuntimeError, match="shutting down"):
        adapter.sync(Refusing(), g3, timeout_s=300, loader=lc)
    assert time.monotonic() - started < 120, "declined, not ended by the 300 s deadline"
    declined = lc.progress(_current(lc)["updateId"])
    assert (declined.generation, declined.outcome) == (g3, "RESUMED_OLD")
    assert "declined to install" in declined.error and "shutting down" in declined.error
    assert engine.weight_version == str(g2) and _equal(model.p, want2)
    lc.register(instance, model_name, f"py-{lab['run']}-vllm", node, [worker])
    adapter.sync(client, g3, loader=lc)
    assert client.version == str(g3) == engine.weight_version
    assert _equal(model.p, expected(sd3))

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
    assert (tmp_path / "t" / "weight_relay" / "py.typed").is_file()  # PEP 561: types installed


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


def _verl_config(lab: dict, model: str, manifest_json: dict) -> tuple[dict, dict]:
    """The one ``checkpoint_engine.engine_kwargs.weight_relay`` dict VeRL hands to every actor
    rank and every rollout worker, and the node each process runs on (its environment)."""
    return engine_kwargs(lab, manifest_json, group=f"py-{lab['run']}-verl", sync_timeout_s=120)


def test_verl_shared_engine_kwargs_give_each_process_its_role(lab):
    """One engine_kwargs dict for every process: the topology, not the dict, says who publishes
    (one rank per trainer node), who updates (one worker per replica) and which instance a
    replica is."""
    from weight_relay.adapters import verl as adapter

    kwargs, nodes = _verl_config(lab, f"py-{lab['run']}-verl-roles",
                                 manifest(f"py-{lab['run']}-verl-roles").to_json())
    registry = adapter.CheckpointEngineRegistry
    # VeRL's actor worker passes is_master; its CheckpointEngineWorker does not.
    actors = [registry.new("weight_relay", is_master=r == 0, bucket_size=1 << 20, **kwargs)
              for r in range(4)]
    rollouts = [registry.new("weight_relay", bucket_size=1 << 20, **kwargs) for _ in range(4)]
    # Facts as prepare() reports them on four actor ranks (two per trainer node) and four rollout
    # workers (two replicas of TP 2), each process on its own node and with its own RANK.
    os.environ.pop("WEIGHT_RELAY_NODE", None)
    metadata = []
    for r, e in enumerate(actors):
        os.environ.update(RANK=str(r), WEIGHT_RELAY_NODE=nodes["trainer"][r // 2])
        metadata.append(e.prepare())
    for w, e in enumerate(rollouts):
        os.environ.update(RANK=str(w % 2), WEIGHT_RELAY_NODE=nodes["rollout"][w // 2])
        metadata.append(e.prepare())
    for k in ("RANK", "WEIGHT_RELAY_NODE"):
        os.environ.pop(k)
    assert all(m["host"] == socket.gethostname() and m["pid"] == os.getpid() for m in metadata)
    actor_kw, rollout_kw = registry.get("weight_relay").build_topology(4, 4, metadata)
    assert all(len(v) == 4 for v in [*actor_kw.values(), *rollout_kw.values()])
    assert actor_kw["role"] == ["publisher", "drain", "publisher", "drain"]
    assert actor_kw["node"] == [nodes["trainer"][0]] * 2 + [nodes["trainer"][1]] * 2
    assert actor_kw["coordinator"] == [True, False, False, False]
    assert rollout_kw["role"] == ["updater", "reader", "updater", "reader"]
    assert rollout_kw["replica"] == [0, 0, 1, 1]
    for i, e in enumerate(actors):
        e.init_process_group(**{k: v[i] for k, v in actor_kw.items()})
        assert (e.publisher is not None) == (i % 2 == 0) and e.loader is None
        assert e.publisher is None or e.publisher.rest.base_url == kwargs["publisher_urls"][
            nodes["trainer"][i // 2]]
    for i, e in enumerate(rollouts):  # the updaters register their instance with its loader
        e.init_process_group(**{k: v[i] for k, v in rollout_kw.items()})
        assert e.instance_id == lab["instances"][i // 2] and e.publisher is None
        assert e.loader is not None and e.loader.rest.base_url == kwargs["loader_urls"][
            nodes["rollout"][i // 2]]
    for i, instance in enumerate(lab["instances"]):
        st = rollouts[2 * i].loader.status()
        assert (st.instance_id, st.model, st.node) == (instance, kwargs["manifest"]["model"],
                                                       nodes["rollout"][i])
        assert [w["workerId"] for w in st.workers] == [f"{instance}-verl"]
    # A step never published: the wait ends after sync_timeout_s with an error naming the step.
    reader = registry.new("weight_relay", bucket_size=1 << 20, **{**kwargs, "sync_timeout_s": 0.5})
    reader.init_process_group(rank=1, world_size=2, role="reader", node=nodes["rollout"][0])
    with pytest.raises(UpdateTimeoutError, match=r"trainer step 99 of \S+ not committed after "
                                                 r"0.5 s \(no generation opened\)"):
        asyncio.run(anext(reader.receive_weights(global_steps=99)))
    with pytest.raises(UsageError, match="unknown weight_relay engine kwargs: publisher_url"):
        registry.new("weight_relay", bucket_size=1, publisher_url="http://x", **kwargs)
    # A replica whose workers sit on two nodes cannot be served by one node's loader.
    bad = [*metadata[:4], metadata[4], metadata[7]]
    with pytest.raises(UsageError, match="replica 0 spans nodes"):
        registry.get("weight_relay").build_topology(4, 2, bad)


def test_verl_checkpoint_engine_manager_syncs_each_step(lab, monkeypatch):
    """VeRL's CheckpointEngineManager.update_weights, unchanged, over two actor ranks on the two
    trainer nodes (each its node's publisher) and two rollout replicas of TP 2 (VeRL's real
    CheckpointEngineWorker): send and receive run at once, and after each step every rollout
    worker holds exactly that step's weights; a validation re-sync of a step changes nothing;
    a failed publish leaves the previous step in place and a retry of the step goes through."""
    import verl.checkpoint_engine.base as base
    from verl.workers.config import CheckpointEngineConfig, RolloutConfig

    from weight_relay.adapters import verl as adapter

    assert not adapter.STANDIN
    model_name = f"py-{lab['run']}-verl"
    m = manifest(model_name)
    kwargs, nodes = _verl_config(lab, model_name, m.to_json())
    ce = CheckpointEngineConfig(backend="weight_relay", update_weights_bucket_megabytes=1,
                                engine_kwargs={"weight_relay": kwargs},
                                custom_backend_module="weight_relay.adapters.verl")
    rollout_config = RolloutConfig(name="vllm", checkpoint_engine=ce)
    base_env = {"MASTER_ADDR": "127.0.0.1", "WORLD_SIZE": "2"}
    actor_port = str(free_port())
    actor_procs = [Proc(f"actor{r}", {**base_env, "RANK": str(r), "MASTER_PORT": actor_port,
                                      "WEIGHT_RELAY_NODE": nodes["trainer"][r]},
                        lambda: ActorRank(ce, lambda step: state_dict(100 + step)))
                   for r in range(2)]
    replicas = []
    for rr in range(2):
        port = str(free_port())
        workers = [Proc(f"rollout{rr}.{w}", {**base_env, "RANK": str(w), "MASTER_PORT": port,
                                             "WEIGHT_RELAY_NODE": nodes["rollout"][rr]},
                        lambda rr=rr, w=w: rollout_worker(rollout_config, rr, w))
                   for w in range(2)]
        replicas.append(Replica(rr, workers))
    procs = actor_procs + [w for r in replicas for w in r.workers]
    try:
        ray_get([p.ready for p in procs])
        monkeypatch.setattr(base, "ray", SimpleNamespace(get=ray_get))
        monkeypatch.setattr(base, "RayWorkerGroup", ProcWorkerGroup)
        manager = base.CheckpointEngineManager(ce, ProcWorkerGroup(actor_procs), replicas)
        control = ControlClient(lab["controlUrl"], lab["trainerToken"])
        loaders = [LoaderClient(lab["services"]["loader-" + i], lab["loaderTokens"][i])
                   for i in lab["instances"]]

        def check(step: int) -> int:
            want = expected(state_dict(100 + step))
            (g,) = control.generations(model_name, trainer_step=step)
            assert g["state"] == "ACTIVE", g
            for lc in loaders:
                assert lc.status().generation == g["generation"], (step, g)
                # fetched, then installed: the loader paused the instance for the install alone
                done = lc.progress(_current(lc)["updateId"])
                assert done.generation == g["generation"] and done.updated, done
                assert done.pause_s == done.install_s, done
            for r in replicas:
                for w in r.workers:
                    held = w.call("server_adapter.held").result(60)
                    assert w.call("server_adapter.copies").result(60) == 0  # zero copy
                    assert list(held) == list(want), w.name
                    for name, t in held.items():
                        assert np.array_equal(bits(t), bits(want[name])), (step, w.name, name)
            return int(g["generation"])

        generations = []
        for step in (1, 2, 3):
            manager.update_weights(global_steps=step)
            generations.append(check(step))
        assert len(set(generations)) == 3
        # A validation re-sync of step 3: the same generation, served again, nothing new opened.
        manager.update_weights(global_steps=3)
        assert check(3) == generations[-1]
        assert len(control.generations(model_name)) == 3
        assert all(r.gates == ["abort", "release_kv_cache", "resume_kv_cache",
                               "resume_generation"] * 4 for r in replicas)

        # Step 4's "big" not in the manifest's shape: the publish fails on both ranks.
        ray_get([a.call("replace", 4, {"big": torch.zeros(2048, 4)}) for a in actor_procs])
        with pytest.raises(WorkerError, match="PublishFailedError"):
            manager.update_weights(global_steps=4)
        assert check(3) == generations[-1]  # the failed step left step 3 everywhere
        ray_get([a.call("replace", 4, {}) for a in actor_procs])
        manager.update_weights(global_steps=4)  # the trainer retries the step
        assert check(4) > generations[-1]
    finally:
        for p in procs:
            p.stop()


# ---- SGLang --------------------------------------------------------------------------------
def test_sglang_custom_loader_direct_and_disk_with_failed_load(lab, tmp_path):
    """Where SGLang does not import (the test venv): TP 1 through the stand-in of SGLang's
    custom-loader dispatch; the fused parameters checked against torch.cat of the checkpoint
    tensors. The real classes at TP 2: tests/frameworks/sglang."""
    from weight_relay.adapters import sglang as adapter

    model_name = f"py-{lab['run']}-sglang"
    cfg = dict(model_type="llama", hidden_size=32, intermediate_size=48, num_attention_heads=4,
               num_key_value_heads=2, vocab_size=70, num_hidden_layers=1)
    dims = adapter.ModelDims.of(cfg)
    g = torch.Generator().manual_seed(31)
    p = "model.layers.0."
    shapes = {"model.embed_tokens.weight": (70, 32), p + "self_attn.q_proj.weight": (32, 32),
              p + "self_attn.k_proj.weight": (16, 32), p + "self_attn.v_proj.weight": (16, 32),
              p + "self_attn.o_proj.weight": (32, 32), p + "mlp.gate_proj.weight": (48, 32),
              p + "mlp.up_proj.weight": (48, 32), p + "mlp.down_proj.weight": (32, 48),
              p + "input_layernorm.weight": (32,), p + "post_attention_layernorm.weight": (32,),
              "model.norm.weight": (32,), "lm_head.weight": (70, 32)}
    sd = {n: torch.randn(s, generator=g) for n, s in shapes.items()}
    control = ControlClient(lab["controlUrl"], lab["trainerToken"])
    m = Manifest.of_state_dict(model_name, sd, "bf16", max_fragment_bytes=4096)
    g1, _, _ = publish_generation(control, m, 1, ranks(lab, control), lambda node: sd)
    want = {n: t.to(torch.bfloat16) for n, t in sd.items()}
    instance, lc = engines(lab)[0]
    node = lc.status().node
    url, token = lab["services"]["loader-" + instance], lab["loaderTokens"][instance]
    relay = adapter.SGLangRelay(lc, url, token, instance, dims, m, 1)
    compat = compat_worker(f"{instance}-sglc", node, f"py-{lab['run']}-{instance}-sglc", m,
                           rank=1)
    relay.register(model_name, f"py-{lab['run']}-sglang", node,
                   f"py-{lab['run']}-{instance}-sgl", [compat])
    def fuse(want):  # SGLang's names and layout, computed here independently of the adapter
        fused = {
            "model.embed_tokens.weight": torch.cat([want["model.embed_tokens.weight"],
                                                    torch.zeros(58, 32, dtype=torch.bfloat16)]),
            p + "self_attn.qkv_proj.weight": torch.cat([want[p + f"self_attn.{x}_proj.weight"]
                                                        for x in "qkv"]),
            p + "mlp.gate_up_proj.weight": torch.cat([want[p + "mlp.gate_proj.weight"],
                                                      want[p + "mlp.up_proj.weight"]]),
            "lm_head.weight": torch.cat([want["lm_head.weight"],
                                         torch.zeros(58, 32, dtype=torch.bfloat16)]),
        }
        fused.update({n: want[n] for n in (
            p + "self_attn.o_proj.weight", p + "mlp.down_proj.weight",
            p + "input_layernorm.weight", "model.norm.weight",
            p + "post_attention_layernorm.weight")})
        return fused

    fused = fuse(want)
    tp_model = Model({n: (tuple(t.shape), t.dtype) for n, t in fused.items()})

    class Engine:  # SGLang's session and custom-loader dispatch, as the stand-in has it
        def __init__(self):
            self.begun: list[str] = []  # the loader's update phase at each session opened

        def begin_weight_update(self):
            self.begun.append(_current(lc)["phase"])
            self.open = True
            return True, "Success"

        def end_weight_update(self):
            self.open = False
            return True, "Success"

        def update_weights_from_tensor(self, named_tensors, load_format=None, flush_cache=True):
            assert self.open
            return _standin.sglang_update_weights_from_tensor(
                tp_model, named_tensors, load_format, [adapter.LOAD_FORMAT])

    engine = Engine()
    relay.update(engine, g1)
    assert _equal(tp_model.p, fused)
    # A failing load (a shape the model does not have) changes no parameter and raises
    # WeightLoadError in the driver, not in SGLang's custom loader.
    tp_model.p["model.norm.weight"] = torch.zeros(33, dtype=torch.bfloat16)
    before = {k: v.clone() for k, v in tp_model.p.items()}
    with pytest.raises(WeightLoadError, match=r"norm\.weight"):
        relay.update(engine, g1)
    assert _equal(tp_model.p, before) and not engine.open
    tp_model.p["model.norm.weight"] = fused["model.norm.weight"].clone()

    # Registered staged: the transfer is a fetch while SGLang serves (no session open: the update
    # already waits at FETCHED when SGLang's session opens), the install runs in the session.
    relay.register(model_name, f"py-{lab['run']}-sglang", node,
                   f"py-{lab['run']}-{instance}-sgl", [compat], direct_install="staged")
    sd2 = {n: torch.randn(t.shape, generator=g) for n, t in sd.items()}
    g2, _, _ = publish_generation(control, m, 2, ranks(lab, control), lambda node: sd2)
    fused2 = fuse({n: t.to(torch.bfloat16) for n, t in sd2.items()})
    engine.begun.clear()
    progress = relay.update(engine, g2)
    assert engine.begun == ["FETCHED"]
    assert progress.updated and progress.generation == g2
    assert progress.pause_s == progress.install_s  # the loader paused it for the install alone
    assert _equal(tp_model.p, fused2) and not engine.open
    # A fetch that fails (no such generation) never opens SGLang's session, and the instance,
    # not paused, takes the next update.
    engine.begun.clear()
    with pytest.raises((RelayCallError, UpdateFailedError)):
        relay.update(engine, g2 + 1000)
    assert engine.begun == [] and _equal(tp_model.p, fused2)
    assert not lc.status().paused
    relay.update(engine, g1)
    assert engine.begun == ["FETCHED"] and _equal(tp_model.p, fused)
    adapter.load_direct(tp_model, [("not a ticket", torch.empty(0))])  # never raises
    d = adapter.disk_directory(lc, f"{instance}-sglc", str(tmp_path / "sgl"))
    with safe_open(os.path.join(d, "model.safetensors"), framework="pt") as f:
        assert _equal({k: f.get_tensor(k) for k in f.keys()}, want)
