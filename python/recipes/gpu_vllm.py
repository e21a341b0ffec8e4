"""GPU recipe, vLLM part: the ``weight_relay`` weight-transfer backend in a real
``vllm.LLM`` on one or two GPUs, checked against vLLM loading the same weights from disk.

Not run in CI (no GPU there); every check raises ``SystemExit`` with what differs. Run from the
repository root on a machine with CUDA GPUs, vLLM 0.33.0 and Java 17, after building the jars:

    mvn -B -DskipTests package                 # the services the lab starts (not install)
    pip install vllm==0.33.0 ./python          # this package: the vllm.general_plugins entry point
    python python/recipes/gpu_vllm.py          # TP 1 and (with 2 GPUs) TP 2, bf16 and FP8

What it does, all locally (no model hub):

1. makes a tiny random Llama (2 layers, hidden 256, bf16) with ``transformers`` into
   ``<work>/base`` and a "trained" copy (every tensor perturbed) into ``<work>/step1``;
2. starts the lab (control-api, two publishers, two loaders) as the Python tests do
   (``PythonBench --serve``) and publishes ``step1``'s tensors as one generation;
3. for each case (TP 1, TP 2 if two GPUs; unquantized and ``quantization="fp8_per_tensor"``),
   in a fresh process each:
   - reference: ``LLM(model=<work>/step1, ...)``: vLLM's own load of the new weights; its
     per-rank parameter checksums (``Worker.compute_weight_checksums``) and 8 greedy tokens;
   - relay: ``LLM(model=<work>/base, ..., weight_transfer_config={"backend": "weight_relay"})``,
     ``init_weight_transfer_engine`` (the lab loader's instance), an update to a generation that
     does not exist (must fail and leave every checksum as it was), then ``start_weight_update``
     / ``update_weights({"generation": G})`` / ``finish_weight_update(weight_version=str(G))``;
     every rank's checksums must then equal the reference's, byte for byte, the weight version
     must be ``str(G)``, and the greedy tokens must be the reference's.

``--work DIR`` keeps the files (default: a temporary directory), ``--cases tp1,tp1-fp8,...``
runs a subset, ``--gpu-memory-utilization`` (default 0.3)."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python" / "tests"))  # lab_process: the lab the tests start
PROMPT = [1, 17, 42, 99, 7]
SEEDS = {"base": 0, "step1": 1}


def fail(message: str) -> None:
    raise SystemExit(f"gpu_vllm: MISMATCH: {message}")


# ---- the tiny model, made locally ---------------------------------------------------------------
def make_models(work: Path) -> None:
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(vocab_size=1024, hidden_size=256, intermediate_size=512,
                         num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                         max_position_embeddings=512, tie_word_embeddings=False,
                         dtype="bfloat16", bos_token_id=1, eos_token_id=2)
    torch.manual_seed(SEEDS["base"])
    model = LlamaForCausalLM(config).to(dtype=torch.bfloat16)
    model.save_pretrained(work / "base", safe_serialization=True)
    g = torch.Generator().manual_seed(SEEDS["step1"])
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn(p.shape, generator=g).to(p.dtype) * 0.02)
    model.save_pretrained(work / "step1", safe_serialization=True)


def checkpoint(directory: Path) -> dict[str, Any]:
    from safetensors.torch import load_file

    tensors: dict[str, Any] = {}
    for f in sorted(directory.glob("*.safetensors")):
        tensors.update(load_file(f))
    return tensors


# ---- the lab and the publish ------------------------------------------------------------------
def publish(lab: dict[str, Any], manifest: Any, tensors: dict[str, Any]) -> int:
    from weight_relay import ControlClient, PublisherClient, publish_generation

    control = ControlClient(lab["controlUrl"], lab["trainerToken"])
    ranks = {name[len("publisher-"):]: PublisherClient(url, lab["trainerToken"],
                                                       coordinator=control)
             for name, url in lab["services"].items() if name.startswith("publisher-")}
    generation, _, _ = publish_generation(control, manifest, 1, ranks, lambda node: tensors)
    return int(generation)


# ---- one case, in a process of its own --------------------------------------------------------
def llm(model_dir: Path, tp: int, fp8: bool, memory: float, relay: bool) -> Any:
    from vllm import LLM

    kwargs: dict[str, Any] = dict(model=str(model_dir), tensor_parallel_size=tp,
                                  dtype="bfloat16", enforce_eager=True, skip_tokenizer_init=True,
                                  gpu_memory_utilization=memory, max_model_len=256, seed=0)
    if fp8:
        kwargs["quantization"] = "fp8_per_tensor"
    if relay:
        kwargs["weight_transfer_config"] = {"backend": "weight_relay"}
    return LLM(**kwargs)


def tokens(engine: Any) -> list[int]:
    from vllm import SamplingParams

    out = engine.generate([{"prompt_token_ids": PROMPT}],
                          SamplingParams(max_tokens=8, temperature=0.0, ignore_eos=True))
    return list(out[0].outputs[0].token_ids)


def checksums(engine: Any) -> list[dict[str, str]]:
    return list(engine.collective_rpc("compute_weight_checksums"))


def run_case(args: argparse.Namespace) -> None:
    spec = json.loads(args.case_spec)
    tp, fp8, memory = spec["tp"], spec["fp8"], spec["memory"]
    work = Path(spec["work"])
    if spec["role"] == "reference":
        engine = llm(work / "step1", tp, fp8, memory, relay=False)
        print(json.dumps({"checksums": checksums(engine), "tokens": tokens(engine)}), flush=True)
        return
    from weight_relay import LoaderClient

    engine = llm(work / "base", tp, fp8, memory, relay=True)
    lab, instance = spec["lab"], spec["instance"]
    url, token = lab["services"]["loader-" + instance], lab["loaderTokens"][instance]
    node = LoaderClient(url, token).status().node
    engine.init_weight_transfer_engine({"init_info": {
        "loader_url": url, "token": token, "instance_id": instance, "model": spec["model"],
        "group": f"gpu-recipe-{instance}", "node": node, "manifest": spec["manifest"]}})
    before = checksums(engine)
    engine.start_weight_update()
    try:  # a generation that does not exist: every rank's update_weights must raise
        engine.update_weights({"update_info": {"generation": spec["generation"] + 1000}})
    except Exception as e:  # vLLM re-raises the workers' errors in its own wrapper
        print(f"gpu_vllm: the failed update raised, as it must: {e!r}"[:400], file=sys.stderr)
    else:
        fail("an update to a generation that does not exist did not fail")
    if checksums(engine) != before:
        fail("a failed update changed the weights")
    g = spec["generation"]
    engine.start_weight_update()
    engine.update_weights({"update_info": {"generation": g}})
    engine.finish_weight_update(weight_version=str(g))
    print(json.dumps({"checksums": checksums(engine), "before": before,
                      "tokens": tokens(engine), "version": engine.get_weight_version()}),
          flush=True)


def case_process(spec: dict[str, Any]) -> dict[str, Any]:
    r = subprocess.run([sys.executable, __file__, "--case-spec", json.dumps(spec)],
                       stdout=subprocess.PIPE, text=True, timeout=1800)
    if r.returncode != 0:
        raise SystemExit(f"gpu_vllm: case {spec['name']} ({spec['role']}) failed "
                         f"(exit {r.returncode})")
    return json.loads(r.stdout.strip().splitlines()[-1])


def compare(name: str, ref: dict[str, Any], got: dict[str, Any], generation: int) -> None:
    if len(got["checksums"]) != len(ref["checksums"]):
        fail(f"{name}: {len(got['checksums'])} ranks vs {len(ref['checksums'])}")
    for rank, (want, have) in enumerate(zip(ref["checksums"], got["checksums"], strict=True)):
        if sorted(want) != sorted(have):
            fail(f"{name}: rank {rank} parameters differ: {sorted(set(want) ^ set(have))}")
        bad = [p for p in want if want[p] != have[p]]
        if bad:
            fail(f"{name}: rank {rank}: {len(bad)} parameters differ from vLLM's own load "
                 f"of the new weights: {bad[:5]}")
        if got["before"][rank] == have:
            fail(f"{name}: rank {rank} held the new weights before the update")
    if got["version"] != str(generation):
        fail(f"{name}: weight version {got['version']!r}, expected {generation}")
    if got["tokens"] != ref["tokens"]:
        fail(f"{name}: greedy tokens {got['tokens']} vs vLLM's own load {ref['tokens']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=Path)
    parser.add_argument("--cases", default="")
    parser.add_argument("--gpu-memory-utilization", type=float, default=0.3)
    parser.add_argument("--case-spec", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.case_spec:
        run_case(args)
        return
    import torch

    gpus = torch.cuda.device_count()
    if gpus < 1:
        raise SystemExit("gpu_vllm: no CUDA GPU here")
    cases = [(f"tp{tp}{'-fp8' if fp8 else ''}", tp, fp8)
             for tp in (1, 2) if tp <= gpus for fp8 in (False, True)]
    if args.cases:
        wanted = set(args.cases.split(","))
        cases = [c for c in cases if c[0] in wanted]
    work = args.work or Path(tempfile.mkdtemp(prefix="wr-gpu-vllm-"))
    work.mkdir(parents=True, exist_ok=True)
    make_models(work)
    import lab_process

    lab_proc, lab = lab_process.start("-Xmx1g", f"-Djava.io.tmpdir={work}")
    try:
        results = []
        for i, (name, tp, fp8) in enumerate(cases):
            model = f"gpu-recipe-{os.getpid()}-{name}"
            from weight_relay import Manifest

            tensors = checkpoint(work / "step1")
            manifest = Manifest.of_state_dict(model, tensors)
            generation = publish(lab, manifest, tensors)
            spec = {"name": name, "tp": tp, "fp8": fp8, "work": str(work),
                    "memory": args.gpu_memory_utilization, "lab": lab,
                    "instance": lab["instances"][i % len(lab["instances"])], "model": model,
                    "manifest": manifest.to_json(), "generation": generation}
            ref = case_process({**spec, "role": "reference"})
            got = case_process({**spec, "role": "relay"})
            compare(name, ref, got, generation)
            results.append(name)
            print(f"gpu_vllm: {name}: every rank holds exactly what vLLM loads from the new "
                  f"checkpoint ({len(ref['checksums'])} rank(s)); failed update left the old "
                  f"weights; tokens {got['tokens']}", flush=True)
        print(json.dumps({"gpu_vllm": "ok", "cases": results}))
    finally:
        lab_process.stop(lab_proc)


if __name__ == "__main__":
    main()
