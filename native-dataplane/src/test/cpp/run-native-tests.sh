#!/usr/bin/env bash
# Builds the C API test driver with a checker and runs it.
#   asan      AddressSanitizer + UndefinedBehaviorSanitizer + LeakSanitizer (default)
#   tsan      ThreadSanitizer
#   valgrind  plain -O1 -g build under valgrind memcheck (leaks are errors)
set -euo pipefail
cd "$(dirname "$0")/../../.."
mode="${1:-asan}"
out=target/native-test
mkdir -p "$out"
src=(src/main/cpp/*.cc src/bench/cpp/*.cc src/test/cpp/dp_test.cc)
flags=(-std=c++17 -g -O1 -fno-omit-frame-pointer -pthread -Isrc/main/cpp -Isrc/bench/cpp)
case "$mode" in
    asan)
        g++ "${flags[@]}" -fsanitize=address,undefined -fno-sanitize-recover=undefined \
            "${src[@]}" -o "$out/dp_test_asan"
        ASAN_OPTIONS=detect_leaks=1 "$out/dp_test_asan"
        ;;
    tsan)
        g++ "${flags[@]}" -fsanitize=thread "${src[@]}" -o "$out/dp_test_tsan"
        TSAN_OPTIONS=halt_on_error=1 "$out/dp_test_tsan"
        ;;
    valgrind)
        g++ "${flags[@]}" "${src[@]}" -o "$out/dp_test_vg"
        valgrind --leak-check=full --show-leak-kinds=all --errors-for-leak-kinds=all \
            --error-exitcode=1 "$out/dp_test_vg"
        ;;
    *)
        echo "usage: $0 [asan|tsan|valgrind]" >&2
        exit 2
        ;;
esac
