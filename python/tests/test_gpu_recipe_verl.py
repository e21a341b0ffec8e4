"""The GPU recipe for VeRL (``recipes/gpu_verl.py``) cannot run its CUDA part here (no GPU); its
``--cpu`` run is the same script with every tensor on the CPU: VeRL's own CheckpointEngineManager,
two actor ranks, two rollout replicas, three steps and a re-sync against a lab of its own, every
byte checked. It must end ``OK``, so the recipe cannot rot while nobody has a GPU."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_verl_recipe_runs_through_on_the_cpu() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "python" / "src")}
    run = subprocess.run([sys.executable, str(ROOT / "python" / "recipes" / "gpu_verl.py"),
                          "--cpu"], capture_output=True, text=True, timeout=900, env=env,
                         cwd=ROOT)
    tail = (run.stdout + run.stderr)[-4000:]
    assert run.returncode == 0, tail
    lines = run.stdout.strip().splitlines()
    assert lines[-1] == "OK", tail
    assert [line for line in lines if "every byte held" in line] == [
        f"gpu_verl: step {s} -> generation {g}, every byte held"
        for s, g in ((1, 1), (2, 2), (3, 3))], tail
