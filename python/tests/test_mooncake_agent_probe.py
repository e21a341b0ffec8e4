"""The agent's start-up probe against a store that fails its first transfers the way the pinned
wheel's tcp transport sometimes does (TRANSFER_FAIL into a segment just mounted). The store here is
a stand-in, named as such: the real one cannot be made to fail on demand. Everything else the agent
does at start is tested against the real Mooncake in ``test_mooncake_agent.py``."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from weight_relay.mooncake_agent import Agent, MooncakeSetupError


class _FlakyStore:
    """Stand-in store: ``put_from`` answers the given codes in turn, then 0."""

    def __init__(self, codes: list[int]) -> None:
        self.codes = list(codes)
        self.keys: list[str] = []
        self.registered = 0

    def register_buffer(self, address: int, length: int) -> int:
        self.registered += 1
        return 0

    def unregister_buffer(self, address: int) -> int:
        self.registered -= 1
        return 0

    def put_from(self, key: str, address: int, length: int, config: Any) -> int:
        self.keys.append(key)
        return self.codes.pop(0) if self.codes else 0

    def get_replica_desc(self, key: str) -> list[Any]:
        descriptor = SimpleNamespace(
            buffer_descriptor=SimpleNamespace(transport_endpoint="127.0.0.1:12345"))
        return [SimpleNamespace(is_memory_replica=lambda: True,
                                get_memory_descriptor=lambda: descriptor)]

    def remove(self, key: str, force: bool) -> int:
        return 0


def _agent(store: _FlakyStore) -> Any:
    return SimpleNamespace(store=store, store_segment="127.0.0.1:1",
                           _replicate_config=lambda: SimpleNamespace())


def test_a_transfer_fail_of_the_probe_is_tried_again_with_a_new_key() -> None:
    store = _FlakyStore([-800, -800])
    assert Agent._own_endpoint(_agent(store)) == "127.0.0.1:12345"
    assert len(store.keys) == 3 and len(set(store.keys)) == 3
    assert store.registered == 0


def test_a_probe_that_keeps_failing_refuses_the_start_naming_the_code() -> None:
    store = _FlakyStore([-800] * 10)
    with pytest.raises(MooncakeSetupError, match=r"failed with -800 \(TRANSFER_FAIL\)"):
        Agent._own_endpoint(_agent(store))
    assert len(store.keys) == 4
    assert store.registered == 0


def test_another_error_is_not_tried_again() -> None:
    store = _FlakyStore([-600])
    with pytest.raises(MooncakeSetupError, match=r"-600 \(INVALID_PARAMS\)"):
        Agent._own_endpoint(_agent(store))
    assert len(store.keys) == 1
