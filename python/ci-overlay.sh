#!/usr/bin/env bash
# Creates (or reuses) an overlay venv for one framework whose real classes the adapter tests drive:
# python/ci-overlay.sh vllm|sglang -> ${WEIGHT_RELAY_VENV:-/opt/weight-relay/venv}-<name>.
# The overlay sees the test venv's packages (torch, numpy, pytest, weight_relay's dependencies)
# through a .pth line and installs only the framework and the small packages its imports need,
# pinned in python/overlays/<name>.txt, with --no-deps: the framework's own torch pin is not
# honoured on purpose (its weight-update classes import and run on the test venv's torch 2.15,
# and the full install is 10 GB). `pip check` complains by design. Run after python/ci-venv.sh.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
name="${1:?usage: ci-overlay.sh vllm|sglang}"
list="$here/overlays/$name.txt"
[ -f "$list" ] || { echo "ci-overlay: no $list" >&2; exit 1; }
base="${WEIGHT_RELAY_VENV:-/opt/weight-relay/venv}"
venv="$base-$name"
[ -x "$base/bin/python" ] || { echo "ci-overlay: run python/ci-venv.sh first ($base missing)" >&2; exit 1; }
case "$name" in
    vllm) check='from vllm.distributed.weight_transfer import WeightTransferEngineFactory; from vllm.v1.worker.gpu_worker import Worker' ;;
    sglang) check='from sglang.srt.model_loader.loader import DefaultModelLoader; from sglang.srt.managers.scheduler import Scheduler' ;;
    *) check="import $name" ;;
esac
base_site="$("$base/bin/python" -c 'import site; print(site.getsitepackages()[0])')"
want="$( (cat "$list"; echo "$base_site"; cat "$base/.weight-relay-stamp" 2>/dev/null) | sha256sum | cut -d' ' -f1)"
if [ -f "$venv/.weight-relay-stamp" ] && [ "$(cat "$venv/.weight-relay-stamp")" = "$want" ] \
        && "$venv/bin/python" -c "$check" >/dev/null 2>&1; then
    echo "ci-overlay: reusing $venv"
    exit 0
fi
echo "ci-overlay: creating $venv (pip install --no-deps -r python/overlays/$name.txt over $base)"
rm -rf "$venv"
"$base/bin/python" -m venv "$venv"
site="$("$venv/bin/python" -c 'import site; print(site.getsitepackages()[0])')"
echo "$base_site" > "$site/weight_relay_base.pth"
"$venv/bin/python" -m pip install -q --disable-pip-version-check --no-deps -r "$list"
"$venv/bin/python" -c "$check" >/dev/null 2>&1 || {
    "$venv/bin/python" -c "$check"; echo "ci-overlay: $name does not import" >&2; exit 1; }
echo "$want" > "$venv/.weight-relay-stamp"
echo "ci-overlay: $name ready in $venv"
