"""The agent's start-up probe and its ``put`` against a store that fails transfers the way the
pinned wheel's tcp transport sometimes does (TRANSFER_FAIL into a segment just mounted). The store
here is a stand-in, named as such: the real one cannot be made to fail on demand. Everything else
the agent does is tested against the real Mooncake in ``test_mooncake_agent.py``."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from weight_relay import mooncake_agent
from weight_relay.mooncake_agent import Agent, MooncakeSetupError


class _FlakyStore:
    """Stand-in store: ``put_from`` answers the given codes in turn, then 0."""

    def __init__(self, codes: list[int]) -> None:
        self.codes = list(codes)
        self.keys: list[str] = []
        self.registered = 0
        self.batches: list[list[str]] = []

    def register_buffer(self, address: int, length: int) -> int:
        self.registered += 1
        return 0

    def unregister_buffer(self, address: int) -> int:
        self.registered -= 1
        return 0

    def put_from(self, key: str, address: int, length: int, config: Any) -> int:
        self.keys.append(key)
        return self.codes.pop(0) if self.codes else 0

    def batch_put_from(self, keys: list[str], addresses: list[int], sizes: list[int],
                       config: Any) -> list[int]:
        """Each key's code is the next scripted one (0 once the script is spent)."""
        self.batches.append(list(keys))
        assert len(addresses) == len(sizes) == len(keys)
        return [self.codes.pop(0) if self.codes else 0 for _ in keys]

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


def _put(store: _FlakyStore, keys: list[str]) -> list[int]:
    agent = SimpleNamespace(store=store, store_segment="127.0.0.1:1",
                            _replicate_config=lambda: SimpleNamespace(),
                            _range=lambda cmd, offsets, sizes: 4096)
    answer = Agent.op_put(agent, {"buffer": 1, "keys": keys, "offsets": [0] * len(keys),
                                  "sizes": [8] * len(keys)})
    return list(answer["codes"])


@pytest.fixture
def no_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(mooncake_agent, "_backoff", lambda attempt: None)


def test_a_put_tries_only_its_transfer_failed_keys_again_under_their_own_names(
        no_backoff: None) -> None:
    # a: ok; b: TRANSFER_FAIL then ok; c: OBJECT_ALREADY_EXISTS (an answer, not tried again)
    store = _FlakyStore([0, -800, -705])
    assert _put(store, ["a", "b", "c"]) == [0, 0, -705]
    assert store.batches == [["a", "b", "c"], ["b"]]


def test_a_put_that_keeps_failing_answers_transfer_fail_after_its_last_try(
        no_backoff: None) -> None:
    store = _FlakyStore([-800] * 10)
    assert _put(store, ["a"]) == [-800]
    assert store.batches == [["a"]] * 4
