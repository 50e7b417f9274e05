#!/usr/bin/env bash
# End-to-end checks of the gpass-opt command-line tool: bundled example, text-IR files,
# --timing / --print-ir-after-all / --dot / -o / --list-passes, exit codes, and a crash
# reproducer that gpass-opt reads back.
#   gpass_opt.sh <gpass-opt> <tests/data dir> <scratch dir> [ONNX model, when built with ONNX]
set -u
opt=$1 data=$2 tmp=$3 model=${4:-}
rm -rf "$tmp" && mkdir -p "$tmp"
fails=0 passes=0
check() {  # check NAME CONDITION...
  local name=$1; shift
  if "$@"; then passes=$((passes + 1)); else echo "FAIL: $name"; fails=$((fails + 1)); fi
}

# 1. bundled example through the default pipeline
"$opt" --passes=default --timing --print-ir-after-all --stats >"$tmp/out.gir" 2>"$tmp/err.txt"
check "example exit 0" test $? -eq 0
check "dead branch removed" bash -c "! grep -q side_act '$tmp/out.gir'"
check "live output kept" grep -q '%y = MatMul' "$tmp/out.gir"
check "timing line format" grep -Eq '^dce: [0-9]+ nodes \([+-][0-9]+\), [0-9]+ edges \([+-][0-9]+\), [0-9]+\.[0-9]{2} ms$' "$tmp/err.txt"
check "ir after each pass" grep -q 'IR after delete-disconnected' "$tmp/err.txt"
check "statistics printed" grep -q 'statistic dce.removed-nodes = 3' "$tmp/err.txt"

# 2. output file, DOT, and reading the output back (round trip through the tool)
"$opt" --passes=dce -o "$tmp/o.gir" --dot="$tmp/o.dot"
check "-o exit 0" test $? -eq 0
check "dot written" grep -q '^digraph' "$tmp/o.dot"
"$opt" "$tmp/o.gir" -o "$tmp/o2.gir"
check "re-read output" cmp -s "$tmp/o.gir" "$tmp/o2.gir"

# 3. every text-IR fixture passes through unchanged when no pass runs
for f in "$data"/ir/*.gir; do
  "$opt" --no-verify "$f" >"$tmp/fx.gir" 2>/dev/null && "$opt" --no-verify "$tmp/fx.gir" >"$tmp/fx2.gir" 2>/dev/null
  check "fixture $(basename "$f") stable" cmp -s "$tmp/fx.gir" "$tmp/fx2.gir"
done

# 4. errors and exit codes
"$opt" --bogus >/dev/null 2>"$tmp/e1.txt"
check "usage error exit 2" test $? -eq 2
"$opt" --passes=dcee >/dev/null 2>"$tmp/e2.txt"
check "unknown pass exit 1" test $? -eq 1
check "unknown pass suggests" grep -q "did you mean 'dce'" "$tmp/e2.txt"
"$opt" "$tmp/missing.gir" >/dev/null 2>"$tmp/e3.txt"
check "missing file exit 1" test $? -eq 1
printf 'graph {\n  %%a = X(%%nope)\n}\n' >"$tmp/bad.gir"
"$opt" "$tmp/bad.gir" >/dev/null 2>"$tmp/e4.txt"
check "parse error exit 1" test $? -eq 1
check "parse error has line:col" grep -Eq 'bad.gir:2:[0-9]+' "$tmp/e4.txt"
"$opt" --list-passes >"$tmp/list.txt"
check "list passes" grep -q '^  infer-shapes' "$tmp/list.txt"

# 5. crash reproducer: a failing pass writes its input; gpass-opt reads it back and fails the same way
"$opt" --passes=dce,infer-shapes --reproducer-dir="$tmp/repro" "$data/tools/bad_shapes.gir" >/dev/null 2>"$tmp/e5.txt"
check "failing pass exit 1" test $? -eq 1
check "error names pass and node" grep -q "pass 'infer-shapes'.*node 'sum' (op Add)" "$tmp/e5.txt"
check "error names reproducer" grep -q "reproducer written to $tmp/repro/infer-shapes.reproducer.gir" "$tmp/e5.txt"
"$opt" --passes=infer-shapes "$tmp/repro/infer-shapes.reproducer.gir" >/dev/null 2>"$tmp/e6.txt"
check "reproducer re-fails" grep -q "node 'sum' (op Add)" "$tmp/e6.txt"

# 6. ONNX in and out (when gpass-opt has ONNX support)
if [[ -n "$model" ]]; then
  "$opt" --passes=infer-shapes,dce "$model" -o "$tmp/out.onnx" 2>"$tmp/e7.txt"
  check "onnx in/out exit 0" test $? -eq 0
  "$opt" "$tmp/out.onnx" >"$tmp/from_onnx.gir"
  check "exported onnx reads back" grep -q 'return(' "$tmp/from_onnx.gir"
  check "inferred types exported" grep -q -- '-> (f32\[' "$tmp/from_onnx.gir"
fi

echo "$passes passed, $fails failed"
test "$fails" -eq 0
