"""The GPU recipe for vLLM (``recipes/gpu_vllm.py``) cannot run here (no GPU); what can is
checked: its comparison fails loudly on each kind of mismatch and passes on a match."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

RECIPE = Path(__file__).resolve().parents[1] / "recipes" / "gpu_vllm.py"


def _recipe():
    spec = importlib.util.spec_from_file_location("gpu_vllm", RECIPE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_recipe_compares_every_rank_and_fails_loudly() -> None:
    r = _recipe()
    ref = {"checksums": [{"a": "1", "b": "2"}, {"a": "3", "b": "4"}], "tokens": [5, 6]}
    got = {"checksums": [{"a": "1", "b": "2"}, {"a": "3", "b": "4"}], "tokens": [5, 6],
           "before": [{"a": "0", "b": "2"}, {"a": "0", "b": "4"}], "version": "7"}
    r.compare("tp2", ref, got, 7)  # a match passes
    cases = {
        "rank 1: 1 parameters differ": {"checksums": [got["checksums"][0], {"a": "3", "b": "x"}]},
        "rank 0 parameters differ": {"checksums": [{"a": "1"}, got["checksums"][1]]},
        "held the new weights before": {"before": got["checksums"]},
        "weight version '6'": {"version": "6"},
        "greedy tokens": {"tokens": [5, 7]},
    }
    with pytest.raises(SystemExit, match="MISMATCH: tp2: 1 ranks vs 2"):
        r.compare("tp2", ref, {**got, "checksums": got["checksums"][:1]}, 7)
    for message, change in cases.items():
        with pytest.raises(SystemExit, match=f"MISMATCH: tp2: .*{message}"):
            r.compare("tp2", ref, {**got, **change}, 7)
