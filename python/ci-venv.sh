#!/usr/bin/env bash
# Creates (or reuses) the Python virtual environment the python module's tests run in:
# ${WEIGHT_RELAY_VENV:-/opt/weight-relay/venv}, with exactly python/requirements.txt installed.
# Reused as is when its stamp matches the requirements and the interpreter, so repeated runs are
# fast; rebuilt from scratch otherwise. Needs python3 >= 3.10 and PyPI.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="${WEIGHT_RELAY_VENV:-/opt/weight-relay/venv}"
python="${WEIGHT_RELAY_PYTHON:-python3}"

"$python" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else 1)' || {
    echo "ci-venv: $python is older than 3.10" >&2; exit 1; }
want="$( (cat "$here/requirements.txt"; "$python" -c 'import sys; print(sys.version)') | sha256sum | cut -d' ' -f1)"
if [ -f "$venv/.weight-relay-stamp" ] && [ "$(cat "$venv/.weight-relay-stamp")" = "$want" ] \
        && "$venv/bin/python" -c 'import numpy, torch, safetensors, pytest' 2>/dev/null; then
    echo "ci-venv: reusing $venv"
    exit 0
fi
echo "ci-venv: creating $venv (pip install -r python/requirements.txt)"
rm -rf "$venv"
mkdir -p "$(dirname "$venv")"
"$python" -m venv "$venv"
"$venv/bin/python" -m pip install -q --disable-pip-version-check -r "$here/requirements.txt"
"$venv/bin/python" -c 'import numpy, torch, safetensors, pytest; print("ci-venv: torch", torch.__version__, "numpy", numpy.__version__, "safetensors", safetensors.__version__)'
echo "$want" > "$venv/.weight-relay-stamp"
