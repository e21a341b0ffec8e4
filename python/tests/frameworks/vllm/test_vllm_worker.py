"""The vLLM adapter driven by vLLM 0.33.0's own classes (this overlay venv), in vLLM's order,
against the real lab: vLLM's plugin loader registers the engine, ``WeightTransferEngineFactory``
builds it in each rank's real ``gpu_worker.Worker``, and the Worker's
``init_weight_transfer_engine``, ``start_weight_update``, ``update_weights`` and
``finish_weight_update`` run on every rank at once with the same arguments, as vLLM's
``collective_rpc`` runs them (``vllm_ranks.py`` says what is done the CPU way, and the one
stubbed call)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from tiny_llama import checkpoint, kernel, shard
from vllm_ranks import Instance, WorkerError, bits

from helpers import engines, ranks
from weight_relay import ControlClient, Manifest, compat_worker, publish_generation

PYTHON_DIR = Path(__file__).resolve().parents[3]
QUANTIZED = ("o_proj", "down_proj")


@pytest.fixture(scope="module")
def plugin_site(tmp_path_factory: pytest.TempPathFactory) -> str:
    """This package installed as a user installs it (its metadata holds the
    ``vllm.general_plugins`` entry point vLLM's plugin loader reads)."""
    site = tmp_path_factory.mktemp("plugin") / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps",
                    "--disable-pip-version-check", "--target", str(site), str(PYTHON_DIR)],
                   check=True, timeout=300)
    return str(site)


def _publish(lab: dict, model: str, step: int, seed: int,
             extra: dict | None = None) -> tuple[Manifest, int]:
    control = ControlClient(lab["controlUrl"], lab["trainerToken"])
    sd = checkpoint(seed)
    if extra:  # inserted after the tensor named by each key
        sd = {k2: v2 for k, v in sd.items()
              for k2, v2 in [(k, v), *(extra[k].items() if k in extra else [])]}
    m = Manifest.of_state_dict(model, sd, max_fragment_bytes=4096)
    gen, _, _ = publish_generation(control, m, step, ranks(lab, control), lambda node: sd)
    return m, gen


def _init_info(lab: dict, model: str, m: Manifest, instance: str, node: str) -> dict:
    """The one init info vLLM hands every worker (``LLM.init_weight_transfer_engine``)."""
    worker = compat_worker(f"{instance}-vllm", node, f"py-{lab['run']}-{instance}-{model}", m)
    return dict(loader_url=lab["services"]["loader-" + instance],
                token=lab["loaderTokens"][instance], instance_id=instance, model=m.model,
                group=f"py-{lab['run']}-vllm", node=node, worker_id=worker["workerId"],
                register=True, workers=[worker])


def _expected(seed: int, tp: int, quantized: tuple[str, ...] = (), pp: int = 1) -> list[dict]:
    """What each rank must hold (rank r is TP rank r % tp)."""
    want = []
    for r in range(tp * pp):
        k = kernel(shard(checkpoint(seed), r % tp, tp), quantized)
        want.append({n: (str(t.dtype), tuple(t.shape), bits(t)) for n, t in k.items()})
    return want


def _assert_held(inst: Instance, want: list[dict], what: str) -> None:
    for r, (held, expected) in enumerate(zip(inst.collective_rpc("held"), want, strict=True)):
        assert sorted(held) == sorted(expected), (what, r)
        for name, (dtype, shape, data) in expected.items():
            assert held[name][:2] == (dtype, shape), (what, r, name)
            assert held[name][2] == data, f"{what}: rank {r} {name} differs"


def test_the_adapter_is_on_vllms_own_classes_and_says_so() -> None:
    import vllm.distributed.weight_transfer.base as base

    from weight_relay.adapters import vllm as adapter

    assert adapter.STANDIN is False
    assert issubclass(adapter.WeightRelayTransferEngine, base.WeightTransferEngine)
    assert adapter.WeightTransferEngineFactory.__module__ == \
        "vllm.distributed.weight_transfer.factory"
    r = subprocess.run([sys.executable, "-c",
                        "import logging; logging.basicConfig(level=logging.INFO); "
                        "import weight_relay.adapters.vllm as m; print('STANDIN', m.STANDIN)"],
                       capture_output=True, text=True, timeout=300,
                       env={**os.environ, "PYTHONPATH": str(Path(adapter.__file__).parents[2])})
    assert r.returncode == 0, r.stderr
    assert "STANDIN False" in r.stdout
    assert "uses vLLM's own WeightTransferEngine (STANDIN = False)" in r.stderr
    assert "stand-in" not in r.stderr


@pytest.mark.parametrize(("tp", "pp"), [(2, 1), (1, 2)])
def test_tp2_instance_one_update_each_rank_its_shards_and_a_failed_update(
        lab: dict, plugin_site: str, tp: int, pp: int) -> None:
    """Two ranks (TP 2, or PP 2) receive the same init and update info; one loader update serves
    both and each rank's weight loaders take its own shards (byte for byte). An update that
    fails leaves the old weights on both ranks, and vLLM accepts the next update."""
    instance, lc = engines(lab)[0]
    node = lc.status().node
    model = f"py-{lab['run']}-vllm-tp{tp}-pp{pp}"
    m, g1 = _publish(lab, model, 1, seed=1)
    inst = Instance(tp, plugin_site, pp=pp)
    try:
        for module, name, mro in inst.collective_rpc("engine_class"):
            assert (module, name) == ("weight_relay.adapters.vllm", "WeightRelayTransferEngine")
            assert "vllm.distributed.weight_transfer.base.WeightTransferEngine" in mro
        inst.collective_rpc("worker.init_weight_transfer_engine",
                            _init_info(lab, model, m, instance, node))
        pointers = inst.collective_rpc("pointers")

        inst.collective_rpc("worker.start_weight_update")
        inst.collective_rpc("worker.update_weights", {"generation": g1})
        inst.collective_rpc("worker.finish_weight_update")
        _assert_held(inst, _expected(1, tp, pp=pp), "generation 1")
        assert inst.collective_rpc("engine", "weight_version") == [str(g1)] * 2
        assert lc.status().generation == g1
        assert inst.collective_rpc("pointers") == pointers  # loaded into the same storage

        # A generation that does not exist: the loader's update fails on rank 0, rank 1 is told.
        inst.collective_rpc("worker.start_weight_update")
        failed = inst.outcomes("worker.update_weights", {"generation": g1 + 1000})
        assert all(isinstance(e, WorkerError) for e in failed), failed
        assert "InstanceUpdateFailedError" not in str(failed[0])
        other = "tp1" if tp == 2 else "pp1"
        assert "InstanceUpdateFailedError: the update of the instance failed on the driving " \
            f"rank (this is rank {other}; its weights are untouched)" in str(failed[1])
        _assert_held(inst, _expected(1, tp, pp=pp), "after the failed update")
        assert inst.collective_rpc("on_meta") == [[], []]
        assert inst.collective_rpc("pointers") == pointers
        assert inst.collective_rpc("engine", "weight_version") == [str(g1)] * 2
        # vLLM's Worker ended the session when update_weights raised: it refuses finish ...
        for e in inst.outcomes("worker.finish_weight_update"):
            assert isinstance(e, WorkerError)
            assert "finish_weight_update called without a matching start_weight_update" in str(e)
        # ... and accepts the next update.
        _, g2 = _publish(lab, model, 2, seed=2)
        inst.collective_rpc("worker.start_weight_update")
        inst.collective_rpc("worker.update_weights", {"generation": g2})
        inst.collective_rpc("worker.finish_weight_update")
        _assert_held(inst, _expected(2, tp, pp=pp), "generation 2")
        assert inst.collective_rpc("engine", "weight_version") == [str(g2)] * 2
        assert inst.collective_rpc("pointers") == pointers

        # Fetched while vLLM serves (what sync(..., loader=) does): no weight-sync call until the
        # group fetched; then update_weights, given the update's id, only installs it, and the
        # loader's pause is the install alone.
        _, g3 = _publish(lab, model, 3, seed=3)
        fetched = lc.fetch(g3)
        assert fetched.fetched
        _assert_held(inst, _expected(2, tp, pp=pp), "generation 2 while 3 is fetched")
        inst.collective_rpc("worker.start_weight_update")
        inst.collective_rpc("worker.update_weights",
                            {"generation": g3, "update_id": fetched.update_id})
        inst.collective_rpc("worker.finish_weight_update")
        _assert_held(inst, _expected(3, tp, pp=pp), "generation 3, fetched first")
        assert inst.collective_rpc("engine", "weight_version") == [str(g3)] * 2
        done = lc.progress(fetched.update_id)
        assert done.updated and done.pause_s == done.install_s, done
    finally:
        inst.stop()


@pytest.mark.parametrize("tp", [1, 2])
def test_fp8_layers_are_reloaded_through_vllms_layerwise_reload(
        lab: dict, plugin_site: str, tp: int) -> None:
    """o_proj and down_proj are FP8 in kernel format (e4m3, transposed, with a scale); the update
    brings checkpoint-format bf16. Through vLLM's layerwise reload each rank ends with exactly
    the FP8 of its new shard, written into the tensors the kernels hold."""
    instance, lc = engines(lab)[1]
    node = lc.status().node
    model = f"py-{lab['run']}-vllm-fp8-tp{tp}"
    m, g = _publish(lab, model, 1, seed=3)
    inst = Instance(tp, plugin_site, quantized=True)
    try:
        _assert_held(inst, _expected(0, tp, QUANTIZED), "as loaded")
        pointers = inst.collective_rpc("pointers")
        inst.collective_rpc("worker.init_weight_transfer_engine",
                            _init_info(lab, model, m, instance, node))
        inst.collective_rpc("worker.start_weight_update")
        inst.collective_rpc("worker.update_weights", {"generation": g})
        inst.collective_rpc("worker.finish_weight_update")
        _assert_held(inst, _expected(3, tp, QUANTIZED), "generation 1")
        assert inst.collective_rpc("pointers") == pointers
        assert inst.collective_rpc("on_meta") == [[]] * tp
    finally:
        inst.stop()



def test_a_load_that_fails_part_way_is_aborted_and_the_next_update_reloads_every_layer(
        lab: dict, plugin_site: str) -> None:
    """A generation with a tensor the model does not have (after layer 0's): on each rank
    ``load_weights`` raises part-way through vLLM's layerwise reload. The reload is aborted: no
    parameter is left on the meta device, the layers not yet processed hold their old weights
    (in their original storage) and the processed ones the new; vLLM accepts the next update,
    which reloads every layer."""
    instance, lc = engines(lab)[0]
    node = lc.status().node
    bad_model = f"py-{lab['run']}-vllm-bad"
    import torch

    extra = {"model.layers.0.mlp.down_proj.weight":
             {"model.layers.0.mlp.extra.weight": torch.ones(4, dtype=torch.bfloat16)}}
    bad, g_bad = _publish(lab, bad_model, 1, seed=5, extra=extra)
    inst = Instance(2, plugin_site, quantized=True)
    try:
        pointers = inst.collective_rpc("pointers")
        inst.collective_rpc("worker.init_weight_transfer_engine",
                            _init_info(lab, bad_model, bad, instance, node))
        inst.collective_rpc("worker.start_weight_update")
        failed = inst.outcomes("worker.update_weights", {"generation": g_bad})
        for e in failed:
            assert isinstance(e, WorkerError), failed
            assert "InstanceUpdateFailedError" in str(e) and "failed part-way" in str(e)
            assert "model.layers.0.mlp.extra.weight" in str(e)
        assert inst.collective_rpc("on_meta") == [[], []]
        assert inst.collective_rpc("pointers") == pointers
        old, new = _expected(0, 2, QUANTIZED), _expected(5, 2, QUANTIZED)
        first = ("model.embed_tokens.", "model.layers.0.")  # processed before the failure
        mixed = [{n: (nw if n.startswith(first) else od)[n] for n in od}
                 for od, nw in zip(old, new, strict=True)]
        _assert_held(inst, mixed, "after the aborted load")
        for e in inst.outcomes("worker.finish_weight_update"):
            assert "without a matching start_weight_update" in str(e)

        model = f"py-{lab['run']}-vllm-good"
        m, g = _publish(lab, model, 1, seed=6)
        inst.collective_rpc("worker.init_weight_transfer_engine",
                            _init_info(lab, model, m, instance, node))
        inst.collective_rpc("worker.start_weight_update")
        inst.collective_rpc("worker.update_weights", {"generation": g})
        inst.collective_rpc("worker.finish_weight_update")
        _assert_held(inst, _expected(6, 2, QUANTIZED), "after the next update")
        assert inst.collective_rpc("pointers") == pointers
        assert inst.collective_rpc("engine", "weight_version") == [str(g)] * 2
    finally:
        inst.stop()
