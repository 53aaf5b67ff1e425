#!/usr/bin/env bash
# The benchmarks' own plumbing: bench_cpu_roofline --save-model writes the model it
# would measure as a llama2.c file that loads back to the same bytes, and refuses a path it
# cannot write, an unknown --weights, and --weights with --save-model;
# bench/compare_llamacpp.sh refuses a missing llama.cpp build or a bad thread count with a
# clear message (exit 2), and stops with the tool's name when one fails. Plain bash.
set -u
bin=$1
root=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
check() {  # description, command...
  local what=$1
  shift
  if "$@"; then echo "ok: $what"; else echo "FAIL: $what"; fail=1; fi
}

"$bin/bench_cpu_roofline" --synthetic stories260K --save-model "$tmp/a.bin" > "$tmp/out.txt"
check "--save-model exits 0 and names the file" \
  grep -q "wrote $tmp/a.bin (synthetic:stories260K" "$tmp/out.txt"
# stories260K in llama2.c's layout: 7 header ints, the embedding (512 x 64), 5 layers of
# 64 + 64x64 + 2 x 32x64 + 64x64 + 64 + 3 x 172x64 floats, the final norm (64), and the RoPE
# tables (512 positions x 4 x 2); the classifier is the embedding.
floats=$((512 * 64 + 5 * (64 + 4096 + 2 * 2048 + 4096 + 64 + 3 * 11008) + 64 + 512 * 4 * 2))
check "the file has the legacy format's size" \
  test "$(stat -c %s "$tmp/a.bin")" -eq $((7 * 4 + floats * 4))
"$bin/bench_cpu_roofline" --model "$tmp/a.bin" --save-model "$tmp/b.bin" > /dev/null
check "loading and saving again gives the same bytes" cmp -s "$tmp/a.bin" "$tmp/b.bin"
"$bin/bench_cpu_roofline" --synthetic stories260K --save-model "$tmp/a.gguf" > "$tmp/out.txt"
check "--save-model NAME.gguf writes a GGUF F32 file" grep -q "GGUF F32" "$tmp/out.txt"
check "... that starts with the GGUF magic" test "$(head -c 4 "$tmp/a.gguf")" = GGUF
"$bin/bench_cpu_roofline" --model "$tmp/a.gguf" --save-model "$tmp/d.bin" > /dev/null
check "the GGUF file loads back to the same weights (saved as llama2.c: the same bytes)" \
  cmp -s "$tmp/a.bin" "$tmp/d.bin"
"$bin/bench_cpu_roofline" --synthetic stories15M --save-model "$tmp/c.bin" > /dev/null 2>&1
# stories15M: embedding 32000 x 288, 6 layers of 288 + 4 x 288x288 + 288 + 3 x 768x288, the
# final norm, RoPE tables of 256 positions x 24 x 2.
floats=$((32000 * 288 + 6 * (288 + 4 * 82944 + 288 + 3 * 221184) + 288 + 256 * 24 * 2))
check "--synthetic picks the shape written (stories15M's size)" \
  test "$(stat -c %s "$tmp/c.bin")" -eq $((7 * 4 + floats * 4))
"$bin/bench_cpu_roofline" --synthetic stories260K --save-model "$tmp/no/such/dir/x.bin" \
  > /dev/null 2> "$tmp/err.txt"
rc=$?
check "an unwritable path fails (exit 1)" test "$rc" -eq 1
check "... and says which path" \
  grep -q "cannot write model '$tmp/no/such/dir/x.bin'" "$tmp/err.txt"
"$bin/bench_cpu_roofline" --synthetic stories260K --weights q9 > /dev/null 2> "$tmp/err.txt"
rc=$?
check "an unknown --weights is refused (exit 1) before any measuring" test "$rc" -eq 1
check "... in one line naming the flag and the known formats" \
  grep -q "^error: --weights q9: unknown weight format (known: file, f32" "$tmp/err.txt"
check "... and nothing else" test "$(wc -l < "$tmp/err.txt")" -eq 1
"$bin/bench_cpu_roofline" --synthetic stories260K --weights q8_0 --save-model "$tmp/q.bin" \
  > /dev/null 2> "$tmp/err.txt"
rc=$?
check "--weights with --save-model is refused (exit 1), no file written" \
  test "$rc" -eq 1 -a ! -e "$tmp/q.bin"
check "... saying why" grep -q "leave --weights out" "$tmp/err.txt"

cmp_script=$root/bench/compare_llamacpp.sh
bash "$cmp_script" > /dev/null 2> "$tmp/err.txt"
check "compare_llamacpp.sh without arguments prints its usage (exit 2)" test $? -eq 2
check "... the usage names the argument" grep -q "LLAMA_CPP_BIN" "$tmp/err.txt"
bash "$cmp_script" "$tmp/none" > /dev/null 2> "$tmp/err.txt"
check "a folder without llama.cpp's tools is refused (exit 2)" test $? -eq 2
check "... naming the missing tool" grep -q "llama-batched-bench not found" "$tmp/err.txt"
bash "$cmp_script" "$tmp" 0 > /dev/null 2> "$tmp/err.txt"
check "a thread count of 0 is refused (exit 2)" test $? -eq 2
check "... saying why" grep -q "thread count '0' is not a positive integer" "$tmp/err.txt"
# A llama.cpp tool that fails stops the script with its name and its log, not a silent exit.
mkdir -p "$tmp/fake" "$tmp/models"
: > "$tmp/models/tokenizer.bin"
printf '#!/bin/sh\nexit 0\n' > "$tmp/fake/llama-convert-llama2c-to-ggml"
printf '#!/bin/sh\necho "fake failure" >&2\nexit 3\n' > "$tmp/fake/llama-batched-bench"
chmod +x "$tmp/fake/"*
INFERLAB_BUILD=$(dirname "$bin") INFERLAB_MODELS=$tmp/models COMPARE_DIR=$tmp/cmp \
  COMPARE_SYNTHETIC=stories260K bash "$cmp_script" "$tmp/fake" 1 > /dev/null 2> "$tmp/err.txt"
check "a failing llama.cpp tool stops the script (exit 1)" test $? -eq 1
check "... naming the tool and its log" \
  grep -q "error: llama-batched-bench failed, see $tmp/cmp/llama_prefill_t1_1.log" "$tmp/err.txt"
check "... which holds the tool's message" grep -q "fake failure" "$tmp/cmp/llama_prefill_t1_1.log"
check "... after the model was written in the chosen shape" test -s "$tmp/cmp/stories260K.bin"
# bench/compare_kl_llamacpp.sh (chapter 09 against llama-perplexity): its usage errors.
kl_script=$root/bench/compare_kl_llamacpp.sh
bash "$kl_script" > /dev/null 2> "$tmp/err.txt"
check "compare_kl_llamacpp.sh without arguments prints its usage (exit 2)" test $? -eq 2
check "... the usage names the arguments" grep -q "LLAMA_CPP_BIN \[CHUNK\]" "$tmp/err.txt"
bash "$kl_script" "$tmp/none" > /dev/null 2> "$tmp/err.txt"
check "a folder without llama.cpp's tools is refused (exit 2)" test $? -eq 2
check "... naming the missing tool" grep -q "llama-quantize not found" "$tmp/err.txt"
bash "$kl_script" "$tmp" 2 > /dev/null 2> "$tmp/err.txt"
check "a chunk of 2 tokens is refused (exit 2)" test $? -eq 2
check "... saying why" grep -q "CHUNK '2' is not an integer >= 3" "$tmp/err.txt"
exit $fail
