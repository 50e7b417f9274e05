#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Fuzzes one of gpass's fuzz targets (fuzz/*.cpp) with libFuzzer + ASan/UBSan (clang 16).
#
#   scripts/fuzz.sh TARGET [SECONDS] [JOBS]   fuzz for SECONDS (default 60) with JOBS processes
#                                             (RUNS=N in the environment: stop after N executions;
#                                             MAX_LEN=B: inputs of at most B bytes, default 65536;
#                                             FUZZ_ARGS="...": more libFuzzer flags)
#   scripts/fuzz.sh --merge TARGET            minimize the working corpus into fuzz/corpus/TARGET
#   scripts/fuzz.sh --list                    the targets
#
# TARGET: text_ir, tf, onnx, run. Builds the `fuzz` preset (build/fuzz), keeps a working corpus
# in build/fuzz/corpus/TARGET seeded from fuzz/corpus/TARGET, fuzz/regressions/TARGET and the
# test data (tests/data; the ONNX node tests of libonnx-testdata for onnx and run), and writes
# what it finds (crash-*, leak-*, oom-*, timeout-*) to build/fuzz/findings/TARGET/. A finding,
# once fixed, goes into fuzz/regressions/TARGET, which CI replays (fuzz.replay.TARGET).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
targets="text_ir tf onnx run"

if [[ "${1:-}" == "--list" ]]; then echo "$targets"; exit 0; fi
merge=0
if [[ "${1:-}" == "--merge" ]]; then merge=1; shift; fi
target="${1:?usage: scripts/fuzz.sh [--merge] TARGET [SECONDS] [JOBS]}"
seconds="${2:-60}"
jobs="${3:-1}"
[[ " $targets " == *" $target "* ]] || { echo "fuzz.sh: unknown target '$target' (one of: $targets)" >&2; exit 2; }

need=()
command -v clang++-16 >/dev/null || need+=(clang-16)
[[ -f /usr/lib/llvm-16/lib/clang/16/lib/linux/libclang_rt.fuzzer-x86_64.a ]] || need+=(libclang-rt-16-dev)
command -v cmake >/dev/null || need+=(cmake)
dpkg -s libboost-dev libeigen3-dev libonnx-dev libprotobuf-dev protobuf-compiler libonnx-testdata >/dev/null 2>&1 ||
  need+=(libboost-dev libeigen3-dev libonnx-dev libprotobuf-dev protobuf-compiler libonnx-testdata)
if ((${#need[@]})); then
  echo "fuzz.sh: installing ${need[*]}"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi

cmake --preset fuzz >/dev/null
cmake --build build/fuzz --target "gpass_fuzz_$target" -j"$(nproc)"
exe="build/fuzz/fuzz/gpass_fuzz_$target"

work="build/fuzz/corpus/$target"
findings="build/fuzz/findings/$target"
mkdir -p "$work" "$findings" "fuzz/corpus/$target"

if ((merge)); then
  "$exe" -merge=1 -rss_limit_mb=2048 -timeout=30 "fuzz/corpus/$target" "$work"
  echo "fuzz.sh: fuzz/corpus/$target now has $(ls "fuzz/corpus/$target" | wc -l) inputs"
  exit 0
fi

seed() {  # copies matching files into the working corpus, named by content hash
  while IFS= read -r -d '' f; do
    cp -n "$f" "$work/seed-$(sha1sum "$f" | cut -c1-16)" 2>/dev/null || true
  done
}
if [[ -z "$(ls -A "$work")" ]]; then
  case "$target" in
    text_ir) find tests/data examples -name '*.gir' -size -64k -print0 | seed ;;
    tf) find tests/data/tf \( -name 'graph.pb' -o -name '*.pbtxt' \) -size -64k -print0 | seed ;;
    onnx | run) find /usr/share/libonnx-testdata/data -name 'model.onnx' -size -64k -print0 | seed ;;
  esac
fi

export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=0:abort_on_error=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
echo "fuzz.sh: $target for ${seconds}s, $jobs job(s), corpus $work ($(ls "$work" | wc -l) inputs)"
args=(-max_total_time="$seconds" -rss_limit_mb=2048 -malloc_limit_mb=2048 -timeout=30 -max_len="${MAX_LEN:-65536}"
      -artifact_prefix="$findings/" -print_final_stats=1)
if [[ -n "${RUNS:-}" ]]; then args+=(-runs="$RUNS"); fi
if [[ -n "${FUZZ_ARGS:-}" ]]; then read -r -a extra <<<"$FUZZ_ARGS"; args+=("${extra[@]}"); fi
if ((jobs > 1)); then args+=(-jobs="$jobs" -workers="$jobs"); fi
set +e
dirs=("$work")  # libFuzzer stops at a corpus directory that does not exist
for d in "fuzz/corpus/$target" "fuzz/regressions/$target"; do [[ -d "$d" ]] && dirs+=("$d"); done
"$exe" "${args[@]}" "${dirs[@]}" 2>&1 | tee "build/fuzz/$target.log" | grep -E "stat::|#[0-9]+ *(DONE|INITED)|ERROR|FINDING|SUMMARY|Test unit written" 
status=${PIPESTATUS[0]}
set -e
echo "fuzz.sh: exit $status; findings: $(ls "$findings" | wc -l) (in $findings); log build/fuzz/$target.log"
exit "$status"
