"""The lab the Python tests run against: control-api, two publishers and two loaders as real
services, started by the lab's own launcher class (``PythonBench --serve``, i.e. ``LabCluster``)
from the jars ``mvn verify`` built before this module."""

from __future__ import annotations

import json
import os
import select
import subprocess
import time
import uuid
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LAB_START_S = 600


def _java_cmd() -> list[str]:
    jar = ROOT / "lab" / "target" / "lab.jar"
    lib = ROOT / "lab" / "target" / "lib"
    if not jar.is_file() or not lib.is_dir():
        pytest.fail(f"{jar} (and {lib}) missing: build the Java modules first "
                    "(mvn -B verify builds them before the python module, or "
                    "mvn -B -DskipTests install)")
    # Five service JVMs start at once: on a loaded 2-core machine their health checks can take
    # longer than LabCluster's default 3 minutes.
    # The lab's logs, secrets and services' temporary files stay with the build, not in /tmp.
    tmp = ROOT / "python" / "target" / "test-tmp"
    tmp.mkdir(parents=True, exist_ok=True)
    cmd = ["java", "-Xmx512m", "-XX:+UseSerialGC", f"-Drelay.home={ROOT}",
           f"-Drelay.lab.healthy-seconds={LAB_START_S}", f"-Djava.io.tmpdir={tmp}"]
    cache = os.environ.get("RELAY_JAVACPP_CACHE")
    if cache:
        cmd.append(f"-Dorg.bytedeco.javacpp.cachedir={cache}")
    return [*cmd, "-cp", f"{jar}:{lib}/*", "io.weightrelay.lab.bench.PythonBench", "--serve",
                  "--model", "tiny", "--instances", "2", "--tp", "1"]


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
    proc = subprocess.Popen(_java_cmd(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=None, cwd=ROOT)
    info = None
    deadline = time.monotonic() + LAB_START_S + 60
    lines = []
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([proc.stdout], [], [], 1.0)
            if not ready:
                if proc.poll() is not None:
                    break
                continue
            line = proc.stdout.readline()
            if not line:
                break
            text = line.decode("utf-8", "replace")
            lines.append(text)
            if text.startswith('{"lab":'):
                info = json.loads(text)["lab"]
                break
        if info is None:
            pytest.fail("the lab did not start: " + "".join(lines[-40:]))
        info["run"] = uuid.uuid4().hex[:8]
        yield info
    finally:
        if proc.stdin:
            proc.stdin.close()
        try:
            proc.wait(timeout=90)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
