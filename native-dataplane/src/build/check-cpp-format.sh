#!/usr/bin/env bash
# Fails the build unless every C++ source of this module is formatted as .clang-format says
# (run by Maven in the validate phase). Never skips: without clang-format it fails and says how
# to install it.
set -euo pipefail
cd "$(dirname "$0")/../.."
shopt -s nullglob
sources=(src/main/cpp/*.h src/main/cpp/*.cc src/bench/cpp/*.h src/bench/cpp/*.cc src/test/cpp/*.cc)
if ! command -v clang-format >/dev/null 2>&1; then
    echo "native-dataplane: clang-format is not installed, and the build checks the C++ format" >&2
    echo "with it. Install it (Debian/Ubuntu: apt-get install -y clang-format), then build again." >&2
    exit 1
fi
if ! clang-format --dry-run --Werror "${sources[@]}"; then
    echo "native-dataplane: C++ sources are not formatted; fix them with" >&2
    echo "  (cd native-dataplane && clang-format -i src/*/cpp/*.h src/*/cpp/*.cc)" >&2
    exit 1
fi
