"""The lab the Python tests run against: control-api, two publishers and two loaders as real
services, started by the lab's own launcher class (``PythonBench --serve``, i.e. ``LabCluster``)
from the jars ``mvn verify`` built before this module (``lab_process``, shared with the GPU
recipes)."""

from __future__ import annotations

import json
import os
import uuid

import pytest

import lab_process


def _jvm_options() -> list[str]:
    # The lab's logs, secrets and services' temporary files stay with the build, not in /tmp.
    tmp = lab_process.ROOT / "python" / "target" / "test-tmp"
    tmp.mkdir(parents=True, exist_ok=True)
    options = ["-Xmx512m", "-XX:+UseSerialGC", f"-Djava.io.tmpdir={tmp}"]
    cache = os.environ.get("RELAY_JAVACPP_CACHE")
    if cache:
        options.append(f"-Dorg.bytedeco.javacpp.cachedir={cache}")
    return options


@pytest.fixture(scope="session")
def lab():
    """``{services, controlUrl, trainerToken, loaderTokens (per instance), operatorToken,
    instances, ...}``.
    ``WEIGHT_RELAY_LAB`` (the path of a file holding a running ``PythonBench --serve``'s line)
    attaches to that lab instead of starting one (for development on a busy machine)."""
    attach = os.environ.get("WEIGHT_RELAY_LAB")
    if attach:
        with open(attach, encoding="utf-8") as fh:
            line = next(x for x in fh if x.startswith('{"lab":'))
        info = json.loads(line)["lab"]
        info["run"] = uuid.uuid4().hex[:8]
        yield info
        return
    try:
        proc, info = lab_process.start(*_jvm_options())
    except lab_process.LabStartError as e:
        pytest.fail(str(e))
    try:
        info["run"] = uuid.uuid4().hex[:8]
        yield info
    finally:
        lab_process.stop(proc)
