#!/usr/bin/env bash
# InferLab and llama.cpp side by side on the same model files, on this machine, in one run.
#
#   bench/compare_llamacpp.sh LLAMA_CPP_BIN [THREADS...]
#
# LLAMA_CPP_BIN is the bin/ folder of a llama.cpp CPU build holding llama-batched-bench and
# llama-convert-llama2c-to-ggml (build them with
#   cmake -B build -DGGML_NATIVE=ON -DLLAMA_CURL=OFF && cmake --build build -j --target \
#     llama-batched-bench llama-convert-llama2c-to-ggml
# from a llama.cpp source tree; on a CPU with AMX add -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF
# -DGGML_AMX_BF16=OFF: its AMX matmul segfaults on the first decode of a quantized model such
# as SmolLM2's. A GGML_NATIVE build compiles that matmul in anyway, and it then stops with an
# illegal instruction: on a CPU whose /proc/cpuinfo shows AMX the script passes --no-repack to
# every llama.cpp tool, which keeps quantized weights away from it). llama-completion (for
# llama.cpp's own load time of SmolLM2) is used when present. THREADS defaults to "1 2".
#
# What it does:
#   1. bench_cpu_roofline --save-model writes the synthetic stories110M-shape model (F32,
#      438 MB) as a llama2.c .bin; llama.cpp's converter turns it into a GGUF (its output matrix
#      is a copy of the shared embedding, so both read the same bytes per token);
#   2. per thread count: llama-batched-bench at llama.cpp's defaults (F16 KV cache, flash
#      attention when it applies; an F32 cache like InferLab's measured slower there): a prefill
#      of 512 tokens, then 64 decode steps of 1 and of 16 sequences, each the median of 3 runs;
#      then bench_cpu_roofline on the same .bin (F32 KV cache; medians of its repetitions);
#      then, when llama-quantize is there, the same weights in Q8_0 and Q4_0 (llama-quantize
#      --pure on llama.cpp's side, every tensor in the one type; --weights on InferLab's, whose
#      quantizers write llama.cpp's blocks): prefill and batch-1 decode, and each engine's decode
#      speed-up over its own F32;
#   3. the same for the real stories260K (prefill of 128 tokens, 256 decode steps; 1 thread),
#      when it and its tokenizer tok512.bin are found;
#   4. SmolLM2-135M-Instruct, a real chat model, when SmolLM2-135M-Instruct.Q4_1.gguf is found:
#      per thread count, a prefill of 512 and batch-1 decode, each engine's quantized kernels
#      on the same Q4_1 blocks (InferLab keeps the file's blocks, as chapter 09 explains), and each
#      side's load time and resident memory: InferLab's from bench_cpu_roofline (file to packed
#      weights; VmRSS after its runs), llama.cpp's from llama-completion's "load time" line
#      (median of 3) and the peak RSS of a batched-bench decode run (/usr/bin/time);
#   5. prints one table. Each line pairs runs taken minutes apart: run it twice on a shared
#      machine before believing a difference under ~10 %.
# Environment: INFERLAB_BUILD (default build), INFERLAB_MODELS or models/ for tokenizer.bin (the
# converter copies the vocabulary from it), COMPARE_DIR (default /tmp/inferlab-vs-llamacpp),
# COMPARE_SYNTHETIC (the shape, default stories110M; any name --synthetic takes),
# COMPARE_ONLY=smollm2 (only step 4: needs llama-batched-bench and the SmolLM2 file alone).
# Not run by CI or ctest: it needs a llama.cpp build, which this project never downloads.
set -euo pipefail

usage() {
  sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}
[[ $# -ge 1 ]] || usage
llama=$1
shift
threads=("$@")
[[ ${#threads[@]} -gt 0 ]] || threads=(1 2)
for t in "${threads[@]}"; do
  [[ $t =~ ^[1-9][0-9]*$ ]] ||
    { echo "error: thread count '$t' is not a positive integer" >&2; exit 2; }
done
only=${COMPARE_ONLY:-}
[[ -z $only || $only == smollm2 ]] ||
  { echo "error: COMPARE_ONLY='$only' (the only part that runs alone is smollm2)" >&2; exit 2; }
tools=(llama-batched-bench)
[[ $only == smollm2 ]] || tools+=(llama-convert-llama2c-to-ggml)
[[ $only != smollm2 || -x /usr/bin/time ]] ||
  { echo "error: /usr/bin/time not found (it measures llama.cpp's resident memory)" >&2; exit 2; }
for tool in "${tools[@]}"; do
  [[ -x $llama/$tool ]] || { echo "error: $llama/$tool not found (see the usage: $0)" >&2; exit 2; }
done
root=$(cd "$(dirname "$0")/.." && pwd)
build=${INFERLAB_BUILD:-$root/build}
ours=$build/bin/bench_cpu_roofline
[[ -x $ours ]] || { echo "error: $ours not found: build InferLab first (README)" >&2; exit 2; }
models=${INFERLAB_MODELS:-$root/models}
vocab=$models/tokenizer.bin
[[ $only == smollm2 || -f $vocab ]] ||
  { echo "error: $vocab not found: set INFERLAB_MODELS (README)" >&2; exit 2; }
dir=${COMPARE_DIR:-/tmp/inferlab-vs-llamacpp}
mkdir -p "$dir"

# llama-batched-bench's markdown table: S_PP t/s (prefill, its 6th column) or S_TG t/s (decode,
# its 8th) of the row with B sequences.
batched_ts() {  # file, B, column (6 or 8)
  awk -F'|' -v b="$2" -v c="$3" '$4 + 0 == b && $2 ~ /[0-9]/ {
    v = $(c + 1); gsub(/ /, "", v); printf "%.1f", v }' "$1"
}
median3() { printf '%s\n' "$@" | sort -g | sed -n 2p; }
# llama_extra (the flags llama.cpp needs on this CPU) and run FILE COMMAND...
# shellcheck source=bench/llamacpp_common.sh
source "$(dirname "$0")/llamacpp_common.sh"
# llama-batched-bench three times, into PREFIX_1.md .. PREFIX_3.md (a single run of it is
# as noisy as any other on a shared machine).
llama_runs() {  # PREFIX, llama-batched-bench arguments...
  local prefix=$1
  shift
  for r in 1 2 3; do
    echo "[compare] llama-batched-bench: $(basename "$prefix"), run $r of 3" >&2
    run "${prefix}_$r.md" "$llama/llama-batched-bench" "${llama_extra[@]}" "$@"
  done
}
# The median over those three runs of one figure (see batched_ts).
llama_median() {  # PREFIX, B, column
  median3 "$(batched_ts "${1}_1.md" "$2" "$3")" "$(batched_ts "${1}_2.md" "$2" "$3")" \
    "$(batched_ts "${1}_3.md" "$2" "$3")"
}
# bench_cpu_roofline's output.
our_decode() { awk '/^decode  B=1:/ { print $3 }' "$1"; }
our_prefill() { awk '/^prefill / { print $3 }' "$1"; }
our_batch() { awk -v b="$2" '$1 == b && NF == 7 { print $2 }' "$1"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }'; }
# bench_cpu_roofline's load line: seconds, then resident MB.
our_load() { awk '/^load: / { print $2 }' "$1"; }
our_rss_mb() { awk '/^load: / { print $(NF - 1) }' "$1"; }
# llama.cpp's own load time (its "load time = N ms" line, in seconds), or "-" without one.
llama_load_s() {
  awk '/load time *=/ { for (i = 1; i < NF; ++i)
                          if ($i == "=") { printf "%.2f", $(i + 1) / 1000; f = 1; exit } }
       END { if (!f) print "-" }' "$1"
}

rows=()
# Appends NAME's prefill row and batch-1 decode row: InferLab's from one bench_cpu_roofline
# output, llama.cpp's from the batch-1 rows of two llama_runs prefixes (they may be the same);
# leaves InferLab's decode in our_tg and llama.cpp's in llama_tg.
# Arguments: NAME, PROMPT TOKENS, THREADS, OUR OUTPUT, LLAMA PREFILL PREFIX, LLAMA DECODE PREFIX.
speed_rows() {
  local pp lpp gain
  pp=$(our_prefill "$4")
  our_tg=$(our_decode "$4")
  lpp=$(llama_median "$5" 1 6)
  llama_tg=$(llama_median "$6" 1 8)
  rows+=("| $1 prefill $2 (tok/s) | $3 | $pp | $lpp | $(ratio "$pp" "$lpp") |")
  gain=$(ratio "$our_tg" "$llama_tg")
  rows+=("| $1 decode, 1 sequence (tok/s) | $3 | $our_tg | $llama_tg | $gain |")
}

shape=${COMPARE_SYNTHETIC:-stories110M}
if [[ $only != smollm2 ]]; then
echo "[compare] writing the model ($shape)" >&2
"$ours" --synthetic "$shape" --save-model "$dir/$shape.bin" >&2
run "$dir/convert.txt" "$llama/llama-convert-llama2c-to-ggml" --copy-vocab-from-model "$vocab" \
  --llama2c-model "$dir/$shape.bin" --llama2c-output-model "$dir/$shape.gguf"

# The prompt of 512 goes through as one batch.
common=(-m "$dir/$shape.gguf" -c 2048 -b 512 -ub 512)
for t in "${threads[@]}"; do
  llama_runs "$dir/llama_prefill_t$t" "${common[@]}" -t "$t" -npp 512 -ntg 1 -npl 1
  llama_runs "$dir/llama_decode_t$t" "${common[@]}" -t "$t" -npp 16 -ntg 64 -npl 1,16
  echo "[compare] $t thread(s): bench_cpu_roofline" >&2
  run "$dir/inferlab_t$t.txt" \
    "$ours" --model "$dir/$shape.bin" --threads "$t" --batches 1 16 --steps 16
  lp=$(llama_median "$dir/llama_prefill_t$t" 1 6)
  l1=$(llama_median "$dir/llama_decode_t$t" 1 8)
  l16=$(llama_median "$dir/llama_decode_t$t" 16 8)
  op=$(our_prefill "$dir/inferlab_t$t.txt")
  od=$(our_decode "$dir/inferlab_t$t.txt")
  o1=$(our_batch "$dir/inferlab_t$t.txt" 1)
  o16=$(our_batch "$dir/inferlab_t$t.txt" 16)
  rows+=("| prefill 512 (tok/s) | $t | $op | $lp | $(ratio "$op" "$lp") |")
  rows+=("| decode, 1 sequence (tok/s) | $t | $od | $l1 | $(ratio "$od" "$l1") |")
  rows+=("| decode, 16 sequences (tok/s) | $t | $o16 | $l16 | $(ratio "$o16" "$l16") |")
  rows+=("| 16 vs 1 sequence | $t | $(ratio "$o16" "$o1")x | $(ratio "$l16" "$l1")x | |")
  if [[ -x $llama/llama-quantize ]]; then
    for q in q8_0 q4_0; do
      Q=${q^^}
      [[ -f $dir/$shape.$q.gguf ]] ||
        run "$dir/quantize_$q.txt" "$llama/llama-quantize" --pure "$dir/$shape.gguf" \
          "$dir/$shape.$q.gguf" "$Q"
      llama_runs "$dir/llama_${q}_t$t" -m "$dir/$shape.$q.gguf" -c 2048 -b 512 -ub 512 \
        -t "$t" -npp 512 -ntg 64 -npl 1
      echo "[compare] $t thread(s): bench_cpu_roofline --weights $q" >&2
      run "$dir/inferlab_${q}_t$t.txt" \
        "$ours" --model "$dir/$shape.bin" --weights "$q" --threads "$t" --batches 1 --steps 16
      speed_rows "$Q" 512 "$t" "$dir/inferlab_${q}_t$t.txt" "$dir/llama_${q}_t$t" \
        "$dir/llama_${q}_t$t"
      gain_ours=$(ratio "$our_tg" "$od")
      gain_llama=$(ratio "$llama_tg" "$l1")
      rows+=("| $Q decode vs own F32 | $t | ${gain_ours}x | ${gain_llama}x | |")
    done
  else
    echo "[compare] Q8_0 and Q4_0 skipped: $llama/llama-quantize not found" >&2
  fi
done

# The real stories260K (overhead-bound: 1 MB of weights), one thread, when it is there.
small=$models/stories260K.bin
small_vocab=$models/tok512.bin
if [[ -f $small && -f $small_vocab ]]; then
  run "$dir/convert_s260k.txt" "$llama/llama-convert-llama2c-to-ggml" \
    --copy-vocab-from-model "$small_vocab" --llama2c-model "$small" \
    --llama2c-output-model "$dir/s260k.gguf"
  llama_runs "$dir/llama_s260k" -m "$dir/s260k.gguf" -c 512 -b 128 -ub 128 -t 1 -npp 128 \
    -ntg 256 -npl 1
  echo "[compare] stories260K, 1 thread: bench_cpu_roofline" >&2
  run "$dir/inferlab_s260k.txt" \
    "$ours" --model "$small" --threads 1 --prompt-tokens 128 --batches 1 --steps 64
  speed_rows stories260K 128 1 "$dir/inferlab_s260k.txt" "$dir/llama_s260k" "$dir/llama_s260k"
else
  echo "[compare] stories260K skipped: $small or $small_vocab not found" >&2
fi
fi  # COMPARE_ONLY

# SmolLM2-135M-Instruct (Q4_1 linears, Q8_0 embedding): the same file on both sides.
smol=$models/SmolLM2-135M-Instruct.Q4_1.gguf
if [[ -f $smol ]]; then
  for t in "${threads[@]}"; do
    smol_common=(-m "$smol" -c 1024 -b 512 -ub 512 -t "$t" -npl 1)
    llama_runs "$dir/llama_smollm2_prefill_t$t" "${smol_common[@]}" -npp 512 -ntg 1
    llama_runs "$dir/llama_smollm2_decode_t$t" "${smol_common[@]}" -npp 16 -ntg 64
    echo "[compare] llama-batched-bench: SmolLM2 decode under /usr/bin/time (resident memory)" >&2
    run "$dir/llama_smollm2_rss_t$t.md" /usr/bin/time -f %M -o "$dir/llama_smollm2_rss_t$t.kb" \
      "$llama/llama-batched-bench" "${llama_extra[@]}" "${smol_common[@]}" -npp 16 -ntg 64
    lload=()
    if [[ -x $llama/llama-completion ]]; then
      for r in 1 2 3; do
        echo "[compare] llama-completion: SmolLM2 load time, run $r of 3" >&2
        run "$dir/llama_smollm2_load_t${t}_$r.txt" "$llama/llama-completion" "${llama_extra[@]}" \
          -m "$smol" -c 1024 -t "$t" -p "Hi" -n 1 -no-cnv < /dev/null
        lload+=("$(llama_load_s "$dir/llama_smollm2_load_t${t}_$r.log")")
      done
    fi
    echo "[compare] SmolLM2, $t thread(s): bench_cpu_roofline" >&2
    run "$dir/inferlab_smollm2_t$t.txt" \
      "$ours" --model "$smol" --threads "$t" --prompt-tokens 512 --batches 1 --steps 16
    speed_rows "SmolLM2 Q4_1" 512 "$t" "$dir/inferlab_smollm2_t$t.txt" \
      "$dir/llama_smollm2_prefill_t$t" "$dir/llama_smollm2_decode_t$t"
    ol=$(our_load "$dir/inferlab_smollm2_t$t.txt")
    ll=-
    [[ ${#lload[@]} -eq 3 ]] && ll=$(median3 "${lload[@]}")
    orss=$(our_rss_mb "$dir/inferlab_smollm2_t$t.txt")
    lrss=$(awk '{ printf "%.0f", $1 * 1024 / 1e6 }' "$dir/llama_smollm2_rss_t$t.kb")
    rows+=("| SmolLM2 Q4_1 load (s) | $t | $ol | $ll | $(ratio "$ol" "$ll") |")
    rows+=("| SmolLM2 Q4_1 resident memory (MB) | $t | $orss | $lrss | $(ratio "$orss" "$lrss") |")
  done
else
  echo "[compare] SmolLM2 skipped: $smol not found" >&2
fi

echo "== InferLab vs llama.cpp: synthetic $shape shape (F32, and Q8_0/Q4_0 of the same" \
  "weights), stories260K (F32), SmolLM2's Q4_1 file (both engines on its blocks)"
echo "| workload | threads | InferLab | llama.cpp | ratio |"
echo "|---|---|---|---|---|"
printf '%s\n' "${rows[@]}"
echo "(raw outputs in $dir)"
