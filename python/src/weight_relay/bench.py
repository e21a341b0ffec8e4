"""``python -m weight_relay.bench --lab LAB.json``: the Python side of ``./relay bench python``.

Publishes the lab's manifest from two trainer ranks (threads, one per publisher) with this
package, updates every engine of the lab with it, checks every byte the engines hold against what
was published, and prints one JSON line: the best ``python_publish_s`` (first batch handed over to
the commit, every batch staged first, as the Java bench measures) and ``python_update_s`` (first
update request to the last engine UPDATED) over ``--repeat`` rounds after a cold one."""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time

import numpy as np

from .errors import UsageError, VerificationError
from .loader import LoaderClient
from .manifest import Manifest, element_bytes
from .publisher import ControlClient, PublisherClient, publish_generation


def make_weights(manifest: Manifest, seed: int) -> dict[str, np.ndarray]:
    """Finite random values in each tensor's trainer dtype (bf16 as uint16 bits)."""
    rng = np.random.default_rng(seed)
    out: dict[str, np.ndarray] = {}
    for t in manifest.tensors:
        f = rng.standard_normal(t.numel, dtype=np.float32).reshape(t.shape)
        if t.trainer_dtype == "bf16":
            out[t.name] = (f.view(np.uint32) >> 16).astype(np.uint16)
        elif t.trainer_dtype == "fp32":
            out[t.name] = f
        else:
            raise UsageError(f"bench weights for {t.trainer_dtype} are not made here")
    return out


def verify(loader: LoaderClient, manifest: Manifest, weights: dict[str, np.ndarray]) -> int:
    """Compares every byte of every worker of the engine; returns bytes checked."""
    checked = 0
    st = loader.status()
    for w in st.workers:
        if w["mode"] == "compat":
            views = loader.compat_tensors(w["workerId"], framework="numpy")
            for t in manifest.tensors:
                if t.trainer_dtype != t.rollout_dtype:
                    raise UsageError("bench verification needs trainer == rollout dtype")
                got = views[t.name]
                if not np.array_equal(got, weights[t.name].view(got.dtype)):
                    raise VerificationError(f"{w['workerId']}: tensor {t.name} differs")
                checked += got.nbytes
        else:
            for f, got in loader.direct_tensors(w["workerId"], "numpy", manifest):
                src = weights[f["tensor"]]
                idx = tuple(slice(o, o + s) for o, s in zip(f["offset"], f["shape"], strict=True))
                if not np.array_equal(got, src[idx].view(got.dtype)):
                    raise VerificationError(f"{w['workerId']}: fragment of {f['tensor']} differs")
                checked += got.size * element_bytes(manifest.spec(f["tensor"]).rollout_dtype)
    return checked


def update_all(loaders: list[LoaderClient]) -> float:
    errors: list[BaseException] = []
    started = time.perf_counter()

    def run(lc: LoaderClient) -> None:
        try:
            lc.update(None, 600)
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=run, args=(lc,)) for lc in loaders]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m weight_relay.bench")
    p.add_argument("--lab", required=True, help="the lab description ./relay bench python wrote")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--step-base", type=int, default=1000)
    a = p.parse_args(argv)
    with open(a.lab, encoding="utf-8") as fh:
        lab = json.load(fh)
    manifest = Manifest.from_json(lab["manifest"])
    control = ControlClient(lab["controlUrl"], lab["trainerToken"])
    operator = ControlClient(lab["controlUrl"], lab["operatorToken"])
    ranks = {name[len("publisher-"):]: PublisherClient(url, lab["trainerToken"],
                                                       coordinator=control,
                                                       node=name[len("publisher-"):],
                                                       reserve_timeout=120.0)
             for name, url in lab["services"].items() if name.startswith("publisher-")}
    loaders = [LoaderClient(lab["services"]["loader-" + i], lab["loaderTokens"][i])
               for i in lab["instances"]]
    publish_runs, update_runs, checked, exact = [], [], 0, True
    for r in range(a.repeat + 1):
        weights = make_weights(manifest, seed=r + 1)

        def same_weights(node: str, w: dict[str, np.ndarray] = weights) -> dict[str, np.ndarray]:
            return w  # every rank walks the same weights; each stages what its node is assigned

        gen, results, committed = publish_generation(
            control, manifest, a.step_base + r, ranks, same_weights, stage_all=True)
        first = min(x.first_hand_over for x in results if x.first_hand_over)
        u = update_all(loaders)
        try:
            checked = sum(verify(lc, manifest, weights) for lc in loaders)
        except VerificationError as e:
            print(f"bench: generation {gen}: {e}", file=sys.stderr)
            exact = False
        operator.collect_garbage(manifest.model)
        if r > 0:
            publish_runs.append(committed - first)
            update_runs.append(u)
    print(json.dumps({
        "python_publish_s": min(publish_runs), "python_update_s": min(update_runs),
        "publish_s_runs": [round(x, 4) for x in publish_runs],
        "update_s_runs": [round(x, 4) for x in update_runs],
        "bytes": sum(t.rollout_bytes for t in manifest.tensors), "bytes_verified": checked,
        "bit_exact": exact}))
    return 0 if exact else 1


if __name__ == "__main__":
    sys.exit(main())
