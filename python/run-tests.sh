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
"$venv/bin/ruff" check --no-cache src tests recipes
"$venv/bin/mypy" --no-incremental --cache-dir=/dev/null
# The tests under tests/frameworks/<name> drive a framework's real classes (vLLM, SGLang) and run
# in that framework's overlay venv (python/ci-overlay.sh <name>, next to the test venv), each in a
# pytest session of its own; the rest run in the test venv.
run_pytest() {
    local python="$1"; shift
    set +e
    "$python" -m pytest -p no:cacheprovider "$@"
    local rc=$?
    set -e
    if [ "$rc" -eq 5 ]; then
        echo "python: pytest collected no tests ($*)" >&2
        return 1
    fi
    return "$rc"
}
run_pytest "$venv/bin/python" --ignore=tests/frameworks "$@"
if [ "$#" -eq 0 ]; then
    for dir in tests/frameworks/*/; do
        [ -d "$dir" ] || continue
        name="$(basename "$dir")"
        if ! "$venv-$name/bin/python" -c 'import pytest' 2>/dev/null; then
            echo "python: no overlay venv at $venv-$name for $dir: create it with" \
                 "python/ci-overlay.sh $name (.ci/run does)" >&2
            exit 1
        fi
        run_pytest "$venv-$name/bin/python" "$dir"
    done
fi
