#!/usr/bin/env bash
# The python module's tests, as mvn verify runs them: pytest in the venv python/ci-venv.sh made.
# Fails (never skips) when that venv is missing; pytest's exit code 5 (no tests ran) fails too.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="${WEIGHT_RELAY_VENV:-/opt/weight-relay/venv}"
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import numpy, torch, safetensors, pytest' 2>/dev/null \
        || [ ! -x "$venv/bin/ruff" ] || [ ! -x "$venv/bin/mypy" ]; then
    echo "python: no usable virtual environment at $venv: create it with python/ci-venv.sh" \
         "(.ci/run does; WEIGHT_RELAY_VENV moves it)" >&2
    exit 1
fi
cd "$here"
# Lint and type check first (configured in pyproject.toml): a finding fails the build.
"$venv/bin/ruff" check --no-cache src tests
"$venv/bin/mypy" --no-incremental --cache-dir=/dev/null
set +e
"$venv/bin/python" -m pytest -p no:cacheprovider "$@"
rc=$?
set -e
if [ "$rc" -eq 5 ]; then
    echo "python: pytest collected no tests" >&2
    exit 1
fi
exit "$rc"
