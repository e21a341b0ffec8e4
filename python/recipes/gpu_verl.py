"""GPU recipe, VeRL part: VeRL 0.9.1's own ``CheckpointEngineManager.update_weights`` with the
``weight_relay`` checkpoint-engine backend, the actor ranks' weights on CUDA and each rollout
worker loading what it receives into CUDA tensors, checked byte for byte every step.

Not run in CI (no GPU there); every check raises ``SystemExit`` with what differs. Run from the
repository root on a machine with one or two CUDA GPUs, VeRL 0.9.1 and Java 17, after building
the jars:

    mvn -B -DskipTests package                 # the services the lab starts (not install)
    pip install verl==0.9.1 ./python           # this package: the checkpoint-engine backend
    python python/recipes/gpu_verl.py          # 3 steps, a validation re-sync, 2 actor ranks

What it does, all locally:

1. starts the lab (control-api, two publishers on two trainer nodes, two loaders) as the Python
   tests do (``PythonBench --serve``);
2. runs VeRL's ``CheckpointEngineManager`` in the call order VeRL uses (every actor's
   ``send_weights`` at the same time as every rollout worker's ``receive_weights``) over two
   actor ranks, one per trainer node, each yielding its step's state dict from ``cuda:<rank>``
   (the publisher client copies device to staging), and two rollout replicas of two real
   ``CheckpointEngineWorker``s each, whose server adapter copies each received tensor to CUDA;
   the processes are the forked ones of the CI test (``tests/verl_cluster.py``) in place of Ray's
   actors, so the only difference from CI is where the tensors live;
3. steps 1, 2 and 3, then a re-sync of step 3: after each, every rollout worker's CUDA weights
   must equal that step's weights (fp32 published as bf16 where the manifest says so), bit for
   bit, and the lab's loaders must serve the generation opened for that step.

The last line is ``OK``; a mismatch exits naming the step, the worker and the tensor. ``--cpu``
runs the same with every tensor on the CPU (what this machine can check of the plumbing)."""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path
from types import SimpleNamespace
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "python" / "recipes"), str(ROOT / "python" / "tests")]


def fail(message: str) -> None:
    raise SystemExit(f"gpu_verl: MISMATCH: {message}")


def gpu_count() -> int:
    """GPUs as the driver lists them, without initialising CUDA in this process (the actors and
    workers are forked from it, and CUDA does not survive a fork)."""
    if "--cpu" in sys.argv:
        return 0
    try:
        out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError) as e:
        raise SystemExit(f"gpu_verl: no CUDA device (nvidia-smi -L: {e})") from e
    return sum(1 for line in out.stdout.splitlines() if line.startswith("GPU "))


def device_of(rank: int, gpus: int) -> str:
    """``cuda:<rank mod gpus>``; ``cpu`` with ``--cpu`` (a dry run of the plumbing, no GPU)."""
    return f"cuda:{rank % gpus}" if gpus else "cpu"


def cuda_weights(gpus: int) -> Any:
    def weights(step: int) -> dict[str, Any]:
        """The step's state dict on this actor's GPU (called in the actor's own process)."""
        import torch.distributed as dist

        from helpers import state_dict

        device = device_of(dist.get_rank(), gpus)
        return {name: t.to(device) for name, t in state_dict(100 + step).items()}
    return weights


class CudaServerAdapter:
    """The rollout side's server adapter: each received tensor (a view of the loader's image in
    shared memory) copied into a CUDA tensor, as an engine's load into its weights is."""

    def __init__(self, device: str) -> None:
        self.device = device
        self.params: dict[str, Any] = {}

    async def update_weights(self, weights: Any, global_steps: int | None = None,
                             wire_format: str = "named_tensors", **_: Any) -> None:
        from verl.workers.rollout.utils import ensure_async_iterator

        loaded = {}
        async for name, tensor in ensure_async_iterator(weights):
            loaded[name] = tensor.to(self.device, copy=True)
        self.params = loaded

    def held(self) -> dict[str, Any]:
        return {name: t.cpu() for name, t in self.params.items()}


def rollout_worker(rollout_config: Any, device: str) -> Any:
    from verl.checkpoint_engine.base import CheckpointEngineWorker

    return CheckpointEngineWorker(rollout_config, None, CudaServerAdapter(device))


def main() -> None:
    import numpy as np
    import verl.checkpoint_engine.base as base
    from verl.workers.config import CheckpointEngineConfig, RolloutConfig

    import lab_process
    from helpers import bits, expected, manifest, state_dict
    from verl_cluster import (
        ActorRank,
        Proc,
        ProcWorkerGroup,
        Replica,
        engine_kwargs,
        free_port,
        ray_get,
    )
    from weight_relay import ControlClient, LoaderClient

    gpus = gpu_count()
    with tempfile.TemporaryDirectory(prefix="gpu-verl-") as tmp:
        lab_proc, lab = lab_process.start("-Xmx1g", f"-Djava.io.tmpdir={tmp}")
        procs: list[Any] = []
        try:
            model = "gpu-verl"
            kwargs, nodes = engine_kwargs(lab, manifest(model).to_json(), group="gpu-verl",
                                          sync_timeout_s=300)
            loaders = {i: LoaderClient(lab["services"]["loader-" + i], lab["loaderTokens"][i])
                       for i in lab["instances"]}
            ce = CheckpointEngineConfig(backend="weight_relay", update_weights_bucket_megabytes=1,
                                        engine_kwargs={"weight_relay": kwargs},
                                        custom_backend_module="weight_relay.adapters.verl")
            rollout_config = RolloutConfig(name="vllm", checkpoint_engine=ce)
            env = {"MASTER_ADDR": "127.0.0.1", "WORLD_SIZE": "2"}
            actor_port = str(free_port())
            actors = [Proc(f"actor{r}", {**env, "RANK": str(r), "MASTER_PORT": actor_port,
                                         "WEIGHT_RELAY_NODE": nodes["trainer"][r]},
                           lambda: ActorRank(ce, cuda_weights(gpus))) for r in range(2)]
            replicas = []
            for rr, node in enumerate(nodes["rollout"][:2]):
                port = str(free_port())
                workers = [Proc(f"rollout{rr}.{w}",
                                {**env, "RANK": str(w), "MASTER_PORT": port,
                                 "WEIGHT_RELAY_NODE": node},
                                lambda w=w: rollout_worker(rollout_config, device_of(w, gpus)))
                           for w in range(2)]
                replicas.append(Replica(rr, workers))
            procs = actors + [w for r in replicas for w in r.workers]
            ray_get([p.ready for p in procs])
            base.ray = SimpleNamespace(get=ray_get)  # type: ignore[attr-defined]
            base.RayWorkerGroup = ProcWorkerGroup  # type: ignore[attr-defined,misc]
            manager = base.CheckpointEngineManager(ce, ProcWorkerGroup(actors), replicas)
            control = ControlClient(lab["controlUrl"], lab["trainerToken"])

            def check(step: int) -> int:
                want = expected(state_dict(100 + step))
                found = control.generations(model, trainer_step=step)
                if len(found) != 1 or found[0]["state"] != "ACTIVE":
                    fail(f"step {step}: control-api holds {found}")
                generation = int(found[0]["generation"])
                for instance, lc in loaders.items():
                    if lc.status().generation != generation:
                        fail(f"step {step}: loader {instance} serves {lc.status().generation}")
                for r in replicas:
                    for w in r.workers:
                        held = w.call("server_adapter.held").result(120)
                        if list(held) != list(want):
                            fail(f"step {step}: {w.name} holds {list(held)}")
                        for name, t in held.items():
                            if not np.array_equal(bits(t), bits(want[name])):
                                fail(f"step {step}: {w.name}: {name} differs")
                return generation

            generations = []
            for step in (1, 2, 3):
                manager.update_weights(global_steps=step)
                generations.append(check(step))
                print(f"gpu_verl: step {step} -> generation {generations[-1]}, every byte held")
            manager.update_weights(global_steps=3)  # VeRL's validation re-sync
            if check(3) != generations[-1] or len(set(generations)) != 3:
                fail(f"re-sync of step 3 changed the generation: {generations}")
            print("OK")
        finally:
            for p in procs:
                p.stop()
            lab_process.stop(lab_proc)


if __name__ == "__main__":
    main()
