#!/usr/bin/env bash
# What quantization costs in output quality, InferLab against llama.cpp, on the same model,
# the same text and the same scored positions (issue 26's goal: InferLab's Q8_0 KL divergence
# from F32 within 2 x llama.cpp's).
#
#   bench/compare_kl_llamacpp.sh LLAMA_CPP_BIN [CHUNK]
#
# LLAMA_CPP_BIN is the bin/ folder of a llama.cpp CPU build holding llama-quantize,
# llama-perplexity and llama-tokenize (see bench/compare_llamacpp.sh for building one); on a
# CPU whose /proc/cpuinfo shows AMX the script passes --no-repack to llama-perplexity (its AMX
# matmul crashes on quantized weights there). CHUNK (default 256) is llama-perplexity's -c and
# chapter 09's --ppl-chunk: the text is cut into chunks of CHUNK tokens and the second half of
# each is scored; the text must hold at least 2 x CHUNK tokens (llama-perplexity's rule).
# Needs python3 and an InferLab build with ch09_weight_quantization and inferlab_tokenize.
#
# What it does:
#   1. writes chapter 09's built-in text (quality_text(), common/src/analysis/quality_text.cpp)
#      to a file, and checks that llama-tokenize and inferlab_tokenize give the same ids;
#   2. llama-quantize --allow-requantize --pure turns SmolLM2-135M-Instruct.Q4_1.gguf into an
#      F32 GGUF: the reference of both engines is the Q4_1 file's weights as floats (SmolLM2
#      ships quantized); then --pure quantizes that F32 file to each format, every linear layer
#      and the embedding alike, as InferLab's --weights does;
#   3. llama-perplexity on the F32 file saves its logits (--kl-divergence-base), then scores
#      each quantized file against them (--kl-divergence): mean and 99th-percentile KL, "Same
#      top p", perplexity;
#   4. ch09_weight_quantization on the F32 file, --formats f32 and each format quantized at
#      load, --ppl-chunk CHUNK: the same measures on the same positions (its speed columns are
#      not used: --reps 1);
#   5. ch09 again on each llama-quantize file (--formats file): a perplexity bit-equal to the
#      one of step 4 says InferLab's quantizer wrote the same blocks as llama-quantize;
#   6. prints one table and the goal's ratio.
# llama.cpp's KL is computed from its saved logits, which it stores as 16-bit log-probabilities
# clamped at 16 nats below the top one: its numbers differ from an exact computation in the
# fourth significant digit.
# Environment: INFERLAB_BUILD (default build), INFERLAB_MODELS or models/ for the SmolLM2 file,
# COMPARE_DIR (default /tmp/inferlab-kl-vs-llamacpp), KL_FORMATS (default "q8_0 q4_0"; names as
# --weights spells them), KL_THREADS (default 1: on a busy machine more threads can take far
# longer, and the measures do not depend on the thread count).
# Not run by CI or ctest: it needs a llama.cpp build, which this project never downloads.
set -euo pipefail

usage() {
  sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}
[[ $# -ge 1 && $# -le 2 ]] || usage
llama=$1
chunk=${2:-256}
[[ $chunk =~ ^[1-9][0-9]*$ && $chunk -ge 3 ]] ||
  { echo "error: CHUNK '$chunk' is not an integer >= 3" >&2; exit 2; }
threads=${KL_THREADS:-1}
[[ $threads =~ ^[1-9][0-9]*$ ]] ||
  { echo "error: KL_THREADS '$threads' is not a positive integer" >&2; exit 2; }
read -r -a formats <<< "${KL_FORMATS:-q8_0 q4_0}"
for f in "${formats[@]}"; do
  [[ $f =~ ^(q8_0|q4_0|q4_1)$ ]] ||
    { echo "error: KL_FORMATS: '$f' is not one of q8_0, q4_0, q4_1 (SmolLM2's rows)" >&2; exit 2; }
done
for tool in llama-quantize llama-perplexity llama-tokenize; do
  [[ -x $llama/$tool ]] || { echo "error: $llama/$tool not found (see the usage: $0)" >&2; exit 2; }
done
command -v python3 > /dev/null || { echo "error: python3 not found" >&2; exit 2; }
root=$(cd "$(dirname "$0")/.." && pwd)
build=${INFERLAB_BUILD:-$root/build}
ch09=$build/bin/ch09_weight_quantization
tokenize=$build/bin/inferlab_tokenize
for b in "$ch09" "$tokenize"; do
  [[ -x $b ]] || { echo "error: $b not found: build InferLab first (README)" >&2; exit 2; }
done
models=${INFERLAB_MODELS:-$root/models}
smol=$models/SmolLM2-135M-Instruct.Q4_1.gguf
[[ -f $smol ]] || { echo "error: $smol not found: set INFERLAB_MODELS (README)" >&2; exit 2; }
dir=${COMPARE_DIR:-/tmp/inferlab-kl-vs-llamacpp}
mkdir -p "$dir"
# llama_extra (the flags llama.cpp needs on this CPU) and run FILE COMMAND...
# shellcheck source=bench/llamacpp_common.sh
source "$(dirname "$0")/llamacpp_common.sh"

# 1. The text, as the core holds it (the C++ string literals of quality_text()).
text=$dir/pride_and_prejudice_ch1.txt
python3 - "$root/common/src/analysis/quality_text.cpp" "$text" << 'EOF'
import ast, re, sys
src = open(sys.argv[1], encoding="utf-8").read()
body = src[src.index("static const std::string text ="):src.index("return text;")]
literals = re.findall(r'"((?:[^"\\]|\\.)*)"', body)
open(sys.argv[2], "w", encoding="utf-8").write("".join(ast.literal_eval('"' + s + '"')
                                                       for s in literals))
EOF
echo "[kl] tokenizing $(wc -c < "$text") characters with both tokenizers" >&2
run "$dir/llama_ids.txt" "$llama/llama-tokenize" -m "$smol" -f "$text" --ids --log-disable
run "$dir/inferlab_ids.json" "$tokenize" --tokenizer "$smol" --whole --json < "$text"
n_tokens=$(python3 - "$dir/llama_ids.txt" "$dir/inferlab_ids.json" << 'EOF'
import ast, json, sys
theirs = ast.literal_eval(open(sys.argv[1]).read().strip().splitlines()[-1])
ours = json.load(open(sys.argv[2]))["ids"]
if theirs != ours:
    first = next((i for i, (a, b) in enumerate(zip(theirs, ours)) if a != b),
                 min(len(theirs), len(ours)))
    sys.exit(f"error: the tokenizers differ ({len(theirs)} and {len(ours)} ids; first at {first})")
print(len(ours))
EOF
)
[[ $n_tokens -ge $((2 * chunk)) ]] ||
  { echo "error: the text has $n_tokens tokens, llama-perplexity needs 2 x $chunk" >&2; exit 1; }

# 2. The F32 reference and the quantized files.
echo "[kl] llama-quantize: F32, then ${formats[*]}" >&2
run "$dir/quantize_f32.txt" "$llama/llama-quantize" --allow-requantize --pure "$smol" \
  "$dir/smol-f32.gguf" F32 "$threads"
for f in "${formats[@]}"; do
  run "$dir/quantize_$f.txt" "$llama/llama-quantize" --pure "$dir/smol-f32.gguf" \
    "$dir/smol-$f.gguf" "${f^^}" "$threads"
done

# 3. llama.cpp.
ppl=("$llama/llama-perplexity" "${llama_extra[@]}" -f "$text" -c "$chunk" -t "$threads")
echo "[kl] llama-perplexity: the F32 logits" >&2
run "$dir/llama_f32.txt" "${ppl[@]}" -m "$dir/smol-f32.gguf" --kl-divergence-base "$dir/base.kld"
for f in "${formats[@]}"; do
  echo "[kl] llama-perplexity --kl-divergence: $f" >&2
  run "$dir/llama_$f.txt" "${ppl[@]}" -m "$dir/smol-$f.gguf" --kl-divergence \
    --kl-divergence-base "$dir/base.kld"
done

# 4. and 5. InferLab.
ours=("$ch09" --text "$text" --ppl-chunk "$chunk" --reps 1 --threads "$threads" --json)
echo "[kl] ch09_weight_quantization: f32 ${formats[*]}" >&2
list=$(IFS=,; echo "f32,${formats[*]}")
run "$dir/inferlab.json" "${ours[@]}" --model "$dir/smol-f32.gguf" --formats "$list"
for f in "${formats[@]}"; do
  echo "[kl] ch09_weight_quantization: llama-quantize's $f file" >&2
  run "$dir/inferlab_file_$f.json" "${ours[@]}" --model "$dir/smol-$f.gguf" --formats file
done

# 6. The table, from llama-perplexity's statistics lines and chapter 09's JSON.
python3 - "$dir" "$chunk" "$n_tokens" "${formats[@]}" << 'EOF'
import json, re, sys
d, chunk, n_tokens, formats = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4:]

def llama(name, pattern):
    log = open(f"{d}/llama_{name}.txt").read() + open(f"{d}/llama_{name}.log").read()
    m = re.search(pattern, log)
    if not m:
        sys.exit(f"error: no /{pattern}/ in {d}/llama_{name}.txt or .log")
    return float(m.group(1))

number = r"\s*(-?[0-9.]+)"
ours = {f["name"]: f for f in json.load(open(f"{d}/inferlab.json"))["formats"]}
print(f"SmolLM2-135M-Instruct (F32 = its Q4_1 file's weights as floats), {n_tokens} tokens of "
      f"Pride and Prejudice ch. 1, chunks of {chunk}: {n_tokens // chunk} x "
      f"{chunk - 1 - chunk // 2} scored positions")
print(f"{'format':8} {'engine':9} {'KL mean':>9} {'KL p99':>9} {'top-1':>8} {'ppl':>9}")
print(f"{'f32':8} {'llama.cpp':9} {'':>9} {'':>9} {'':>8} "
      f"{llama('f32', r'Final estimate: PPL =' + number):9.4f}")
print(f"{'f32':8} {'InferLab':9} {'':>9} {'':>9} {'':>8} {ours['f32']['perplexity']:9.4f}")
ratios = {}
for f in formats:
    kl = llama(f, r"Mean +KLD:" + number)
    p99 = llama(f, r"99\.0% +KLD:" + number)
    top = llama(f, r"Same top p:" + number)
    pq = llama(f, r"Mean PPL\(Q\) +:" + number)
    o = ours[f]
    file_ppl = json.load(open(f"{d}/inferlab_file_{f}.json"))["formats"][0]["perplexity"]
    same = "same blocks" if file_ppl == o["perplexity"] else f"DIFFERENT (file: {file_ppl:.6f})"
    print(f"{f:8} {'llama.cpp':9} {kl:9.6f} {p99:9.6f} {top:7.2f}% {pq:9.4f}")
    print(f"{f:8} {'InferLab':9} {o['kl_mean']:9.6f} {o['kl_p99']:9.6f} "
          f"{100 * o['top1_agreement']:7.2f}% {o['perplexity']:9.4f}   llama-quantize's file: "
          f"{same}")
    ratios[f] = o["kl_mean"] / kl
for f, r in ratios.items():
    print(f"{f}: InferLab's mean KL is {r:.2f} x llama.cpp's" +
          (f" (goal: at most 2: {'met' if r <= 2 else 'NOT met'})" if f == "q8_0" else ""))
EOF
