"""Starting and stopping the lab the Python tests and the GPU recipes run against: control-api,
two publishers and two loaders as real services, started by the lab's own launcher class
(``PythonBench --serve``, i.e. ``LabCluster``) from the jars ``mvn`` built.

One place for the command line, so that the tests and the recipes start the same lab: its loaders
are two instances of TP 1 (the lab spreads instances evenly over its two nodes)."""

from __future__ import annotations

import json
import select
import subprocess
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
JAR = ROOT / "lab" / "target" / "lab.jar"
LIB = ROOT / "lab" / "target" / "lib"
#: Five service JVMs start at once: on a loaded 2-core machine their health checks take longer
#: than LabCluster's default 3 minutes, so it waits this long, and so do we (plus a minute).
LAB_START_S = 600


class LabStartError(RuntimeError):
    """The lab could not be started: its jars are missing, or it ended or stayed silent."""


def start(*jvm_options: str) -> tuple[subprocess.Popen[bytes], dict[str, Any]]:
    """Starts the lab with ``jvm_options`` (heap, GC, temporary directory) and returns it with
    its answer once every service is healthy (``{services, controlUrl, trainerToken,
    loaderTokens, operatorToken, instances, ...}``). On failure the lab is stopped and
    :class:`LabStartError` carries the last lines it printed."""
    if not JAR.is_file() or not LIB.is_dir():
        raise LabStartError(f"{JAR} (and {LIB}) missing: build the Java modules first "
                            "(mvn -B verify builds them before the python module, or "
                            "mvn -B -DskipTests package)")
    cmd = ["java", *jvm_options, f"-Drelay.home={ROOT}",
           f"-Drelay.lab.healthy-seconds={LAB_START_S}", "-cp", f"{JAR}:{LIB}/*",
           "io.weightrelay.lab.bench.PythonBench", "--serve", "--model", "tiny",
           "--instances", "2", "--tp", "1"]
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=None,
                            cwd=ROOT)
    info, lines = _answer(proc)
    if info is None:
        stop(proc)
        raise LabStartError("the lab did not start: " + "".join(lines[-40:]))
    return proc, info


def stop(proc: subprocess.Popen[bytes]) -> None:
    """Closes the lab's stdin (its signal to stop its services and exit) and waits for it; kills
    it if it has not ended within two minutes."""
    if proc.stdin:
        proc.stdin.close()
    try:
        proc.wait(timeout=120)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _answer(proc: subprocess.Popen[bytes]) -> tuple[dict[str, Any] | None, list[str]]:
    """The lab's ``{"lab": ...}`` line, parsed, or None when it ended or did not print it in
    time; and every line it printed up to there."""
    assert proc.stdout is not None
    lines: list[str] = []
    deadline = time.monotonic() + LAB_START_S + 60
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
            return json.loads(text)["lab"], lines
    return None, lines
