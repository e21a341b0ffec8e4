#!/usr/bin/env bash
# Creates (or reuses) the Python virtual environment the python module's tests run in:
# ${WEIGHT_RELAY_VENV:-/opt/weight-relay/venv}, with python/requirements.txt installed under the
# pins of python/constraints.txt. Reused as is when its stamp matches the requirements, the
# constraints and the interpreter; a venv of the same interpreter whose stamp differs is brought up
# to date in place (pip skips what is already there, so a new pin does not download torch again);
# anything else is rebuilt from scratch. Needs python3 >= 3.10 and PyPI.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="${WEIGHT_RELAY_VENV:-/opt/weight-relay/venv}"
python="${WEIGHT_RELAY_PYTHON:-python3}"
check='import numpy, torch, safetensors, pytest, schemathesis, mypy, verl.checkpoint_engine.base, mooncake.reshard.weight'

"$python" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else 1)' || {
    echo "ci-venv: $python is older than 3.10" >&2; exit 1; }
interpreter="$("$python" -c 'import sys; print(sys.version)')"
want="$( (cat "$here/requirements.txt" "$here/constraints.txt"; echo "$interpreter") | sha256sum | cut -d' ' -f1)"
if [ -f "$venv/.weight-relay-stamp" ] && [ "$(cat "$venv/.weight-relay-stamp")" = "$want" ] \
        && "$venv/bin/python" -c "$check" 2>/dev/null; then
    echo "ci-venv: reusing $venv"
    exit 0
fi
if [ -x "$venv/bin/python" ] && [ "$("$venv/bin/python" -c 'import sys; print(sys.version)' 2>/dev/null)" = "$interpreter" ]; then
    echo "ci-venv: updating $venv in place (pip install -r python/requirements.txt -c python/constraints.txt)"
else
    echo "ci-venv: creating $venv (pip install -r python/requirements.txt -c python/constraints.txt)"
    rm -rf "$venv"
    mkdir -p "$(dirname "$venv")"
    "$python" -m venv "$venv"
fi
rm -f "$venv/.weight-relay-stamp"
"$venv/bin/python" -m pip install -q --disable-pip-version-check \
    -r "$here/requirements.txt" -c "$here/constraints.txt"
"$venv/bin/python" -c "$check"'
import verl
print("ci-venv: torch", torch.__version__, "numpy", numpy.__version__, "safetensors",
      safetensors.__version__, "verl", verl.__version__)'
echo "$want" > "$venv/.weight-relay-stamp"
