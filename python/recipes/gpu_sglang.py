"""GPU recipe, SGLang part: a real ``sglang.Engine`` updated by weight-relay, checked by name.

Run on a machine with one or two CUDA GPUs, from the repository root, after building the jars
(``mvn -B -DskipTests package -pl control-api,loader-service,publisher-service,lab -am``) and
installing SGLang 0.5.23 with its own CUDA torch and kernels (``pip install sglang==0.5.23``) plus
this package (``pip install ./python``)::

    python python/recipes/gpu_sglang.py            # TP 1, and TP 2 when two GPUs are visible
    python python/recipes/gpu_sglang.py --tp 1     # one TP size only

What it does, per TP size: writes a tiny random Llama (``LlamaForCausalLM``, bf16, vocabulary
padded by SGLang) to a temporary directory (no hub, no tokenizer: ``skip_tokenizer_init``);
starts a lab (control-api, two publishers, two loaders, ``PythonBench --serve``) from the jars;
starts ``Engine(model_path=..., tp_size=tp, custom_weight_loader=[LOAD_FORMAT])``; then

1. publishes generation 1 (other random weights) and updates the engine with
   ``SGLangRelay.update`` (loader update, ``begin_weight_update``, ``update_weights_from_tensor``
   with the ticket, ``end_weight_update``);
2. checks every checkpoint tensor with ``Engine.get_weights_by_name`` (SGLang's Llama answers
   the HF names: rank 0's rows of q/k/v, gate/up and the vocabulary, all of o_proj/down_proj)
   against the published bytes, and that the engine still generates;
3. publishes a model whose vocabulary differs: the update must raise ``WeightLoadError`` and the
   engine must still answer generation 1's weights and generate;
4. publishes generation 2 of the served model and checks it the same way.

Any mismatch raises ``SystemExit`` with the tensor's name; the last line is ``OK``."""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import torch

from weight_relay import (
    ControlClient,
    LoaderClient,
    Manifest,
    PublisherClient,
    WeightLoadError,
    publish_generation,
)
from weight_relay.adapters import sglang as adapter

ROOT = Path(__file__).resolve().parents[2]
# The lab the tests start, and the CPU test's tiny model: made here as the tests make them.
_TESTS = ROOT / "python" / "tests"
sys.path[:0] = [str(_TESTS), str(_TESTS / "frameworks" / "sglang")]
from sglang_tp import checkpoint, write_model  # noqa: E402

import lab_process  # noqa: E402

TRUNCATE = 4096  # rows get_weights_by_name returns


def config(vocab: int) -> dict[str, Any]:
    return dict(architectures=["LlamaForCausalLM"], model_type="llama", hidden_size=256,
                intermediate_size=512, num_attention_heads=4, num_key_value_heads=2,
                num_hidden_layers=2, vocab_size=vocab, max_position_embeddings=256,
                rms_norm_eps=1e-6, rope_theta=10000.0, tie_word_embeddings=False,
                torch_dtype="bfloat16", hidden_act="silu", bos_token_id=1, eos_token_id=2)


def weights(cfg: dict[str, Any], seed: int) -> dict[str, torch.Tensor]:
    """The CPU test's random checkpoint for ``cfg`` (``tests/frameworks/sglang/sglang_tp.py``),
    scaled down and in bf16, the dtype the engine serves."""
    return {n: (t * 0.05).to(torch.bfloat16) for n, t in checkpoint(cfg, seed).items()}


def expected_view(name: str, t: torch.Tensor, tp: int, cfg: dict[str, Any]) -> list[Any]:
    """What SGLang's LlamaForCausalLM.get_weights_by_name answers for ``name``: rank 0's rows of
    the row-split tensors (the vocabulary padded to a multiple of 64 with zero rows first), the
    whole of o_proj/down_proj (it gathers their columns), the whole replicated norms."""
    if "embed_tokens" in name or "lm_head" in name:
        padded = (cfg["vocab_size"] + 63) // 64 * 64
        t = torch.cat([t, torch.zeros(padded - t.shape[0], *t.shape[1:], dtype=t.dtype)])
        t = t[: padded // tp]
    elif any(s in name for s in ("q_proj", "k_proj", "v_proj", "gate_proj", "up_proj")):
        t = t[: t.shape[0] // tp]
    return t.to(torch.float32).numpy().tolist()[:TRUNCATE]


def check(engine: Any, sd: dict[str, torch.Tensor], tp: int, cfg: dict[str, Any], what: str
          ) -> None:
    for name, t in sd.items():
        got = engine.get_weights_by_name(name, truncate_size=TRUNCATE)
        want = expected_view(name, t, tp, cfg)
        if got is None:
            raise SystemExit(f"{what}: get_weights_by_name({name}) answered nothing")
        got_t = torch.tensor(got, dtype=torch.float32)
        want_t = torch.tensor(want, dtype=torch.float32)
        if got_t.shape != want_t.shape or not torch.equal(got_t[: len(want_t)], want_t):
            raise SystemExit(f"{what}: {name} differs from the published bytes")
    out = engine.generate(input_ids=[1, 5, 7, 9], sampling_params={"max_new_tokens": 4,
                                                                 "ignore_eos": True})
    if not out or not out.get("output_ids"):
        raise SystemExit(f"{what}: the engine did not generate ({out})")
    print(f"{what}: {len(sd)} tensors as published; generates", flush=True)


def run(tp: int, lab: dict[str, Any], work: str) -> None:
    import sglang

    instance = lab["instances"][0]
    url, token = lab["services"]["loader-" + instance], lab["loaderTokens"][instance]
    control = ControlClient(lab["controlUrl"], lab["trainerToken"])
    publishers = {name[len("publisher-"):]: PublisherClient(u, lab["trainerToken"],
                                                            coordinator=control)
                  for name, u in lab["services"].items() if name.startswith("publisher-")}
    cfg = config(1000)
    start = write_model(os.path.join(work, f"tp{tp}-start"), cfg, weights(cfg, 0))
    engine = sglang.Engine(model_path=start, tp_size=tp, skip_tokenizer_init=True,
                           custom_weight_loader=[adapter.LOAD_FORMAT], mem_fraction_static=0.3,
                           dtype="bfloat16")
    lc = LoaderClient(url, token)
    try:
        node = lc.status().node
        model = f"recipe-sglang-tp{tp}-{os.getpid()}"

        def publish(name: str, sd: dict[str, torch.Tensor], step: int) -> tuple[Manifest, int]:
            m = Manifest.of_state_dict(name, sd, "bf16")
            g, _, _ = publish_generation(control, m, step, publishers, lambda n: sd)
            return m, g

        w1 = weights(cfg, 1)
        m1, g1 = publish(model, w1, 1)
        relay = adapter.SGLangRelay(lc, url, token, instance, adapter.ModelDims.of(cfg), m1, tp)
        relay.register(model, "recipe", node, f"recipe-{os.getpid()}-tp{tp}")
        relay.update(engine, g1)
        check(engine, w1, tp, cfg, f"TP {tp} generation {g1}")

        wide_cfg = config(1200)
        mw, gw = publish(model + "-wide", weights(wide_cfg, 2), 1)
        wide = adapter.SGLangRelay(lc, url, token, instance, adapter.ModelDims.of(wide_cfg), mw,
                                   tp)
        wide.register(model + "-wide", "recipe", node, f"recipe-{os.getpid()}-tp{tp}-wide")
        try:
            wide.update(engine, gw)
        except WeightLoadError as e:
            print(f"TP {tp}: the mismatched model failed as it must: {e}", flush=True)
        else:
            raise SystemExit(f"TP {tp}: a model of another vocabulary loaded")
        check(engine, w1, tp, cfg, f"TP {tp} after the failed load, still generation {g1}")

        relay.register(model, "recipe", node, f"recipe-{os.getpid()}-tp{tp}")
        w2 = weights(cfg, 3)
        _, g2 = publish(model, w2, 2)
        relay.update(engine, g2)
        check(engine, w2, tp, cfg, f"TP {tp} generation {g2}")
    finally:
        lc.close()
        engine.shutdown()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tp", type=int, action="append",
                        help="TP sizes (default: 1, and 2 with two GPUs)")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("no CUDA GPU visible: this recipe needs one or two")
    sizes = args.tp or ([1, 2] if torch.cuda.device_count() >= 2 else [1])
    if max(sizes) > torch.cuda.device_count():
        raise SystemExit(f"TP {max(sizes)} needs {max(sizes)} GPUs, "
                         f"{torch.cuda.device_count()} visible")
    with tempfile.TemporaryDirectory(prefix="weight-relay-recipe-") as work:
        proc, lab = lab_process.start("-Xmx2g", f"-Djava.io.tmpdir={work}")
        try:
            for tp in sizes:
                run(tp, lab, work)
        finally:
            lab_process.stop(proc)
    print("OK")


if __name__ == "__main__":
    sys.exit(main())
