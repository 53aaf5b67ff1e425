#!/usr/bin/env bash
# GPU check: builds InferLab with CUDA, runs the [gpu] tests (ctest -L gpu), every kernel
# benchmark and a chapter run on Q8_0 weights, and prints a compact summary. Meant for one H100/H200-class GPU, where it finishes
# in a few minutes (well inside 8).
#
# Needs INFERLAB_MODELS: the folder holding stories260K.bin, tok512.bin and
# SmolLM2-135M-Instruct.Q4_1.gguf (the Q8_0 / Q4_0 forward test; the golden files are read from
# $INFERLAB_MODELS/../golden, or from INFERLAB_GOLDEN). Models and the GPU are
# then required: a missing one FAILS the check instead of being skipped.
#
# Usage: INFERLAB_MODELS=/path/to/models scripts/gpu_check.sh   [BUILD_DIR=build-cuda]
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD_DIR:-build-cuda}
START=$SECONDS

if [[ -z "${INFERLAB_MODELS:-}" ]]; then
  echo "gpu_check: set INFERLAB_MODELS to the folder holding stories260K.bin, tok512.bin and" >&2
  echo "           SmolLM2-135M-Instruct.Q4_1.gguf (scripts/download_models.sh --smollm2)" >&2
  exit 2
fi
export INFERLAB_REQUIRE_MODELS=1 INFERLAB_REQUIRE_GPU=1
export PATH="/usr/local/cuda/bin:$PATH"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null || true

# --- configure: the GPU's own architecture, else sm_90 ---------------------------------------
configure() {
  cmake -S . -B "$BUILD" -G Ninja -DINFERLAB_CUDA=ON -DINFERLAB_BUILD_DOCS=OFF \
        -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES="$1" >"$BUILD.configure.log" 2>&1
}
if ! configure native; then
  echo "gpu_check: CMAKE_CUDA_ARCHITECTURES=native failed; falling back to 90"
  configure 90 || { tail -30 "$BUILD.configure.log"; exit 1; }
fi

BENCHES=(matmul rmsnorm rope softmax swiglu attention sampling)
TARGETS=(inferlab_gpu_tests bench_runner ch01_naive_loop)
for b in "${BENCHES[@]}"; do TARGETS+=("bench_$b"); done
echo "gpu_check: building ${TARGETS[*]} with $(nproc) jobs"
if ! cmake --build "$BUILD" -j "$(nproc)" --target "${TARGETS[@]}" >"$BUILD.build.log" 2>&1; then
  tail -40 "$BUILD.build.log"
  echo "gpu_check: BUILD FAILED (full log: $BUILD.build.log)"
  exit 1
fi
echo "gpu_check: built in $((SECONDS - START)) s"

# --- tests -------------------------------------------------------------------------------------
ctest --test-dir "$BUILD" -L gpu --output-on-failure --timeout 240 2>&1 | tee "$BUILD.gpu_tests.log"
TEST_RC=${PIPESTATUS[0]}

# --- benchmarks --------------------------------------------------------------------------------
BENCH_FAILED=()
for b in "${BENCHES[@]}"; do
  timeout 150 "$BUILD/bin/bench_$b" 2>&1 | tee "$BUILD.bench_$b.log"
  rc=${PIPESTATUS[0]}
  [[ $rc -ne 0 ]] && BENCH_FAILED+=("bench_$b(rc=$rc)")
done

# End to end through the model runner: decode at batch 1 and 16 on two real shapes (the 7B
# shape keeps 8 of its 32 layers so the synthetic weights build quickly on the host).
timeout 240 "$BUILD/bin/bench_runner" --device cuda --config stories110M --batch 1 16 --steps 32 \
  2>&1 | tee "$BUILD.bench_runner.log"
[[ ${PIPESTATUS[0]} -ne 0 ]] && BENCH_FAILED+=("bench_runner(stories110M)")
timeout 240 "$BUILD/bin/bench_runner" --device cuda --config llama2-7b --layers 8 --batch 1 16 \
  --steps 16 2>&1 | tee -a "$BUILD.bench_runner.log"
[[ ${PIPESTATUS[0]} -ne 0 ]] && BENCH_FAILED+=("bench_runner(llama2-7b)")

# A chapter on weights kept as Q8_0 blocks on the device (the dp4a matmuls, the embedding rows
# dequantized on the device): greedy on a synthetic stories15M, whose rows are whole blocks.
timeout 120 "$BUILD/bin/ch01_naive_loop" --synthetic stories15M --weights q8_0 --device cuda \
  --steps 32 --temperature 0 2>&1 | tee "$BUILD.ch01_q8_0.log"
[[ ${PIPESTATUS[0]} -ne 0 ]] && BENCH_FAILED+=("ch01(--weights q8_0 --device cuda)")

# --- summary -----------------------------------------------------------------------------------
echo
echo "================================ gpu_check summary ================================"
grep -E "tests passed|tests failed" "$BUILD.gpu_tests.log" | tail -1
SKIPPED=$(grep -cE "\((Skipped|Not Run)\)" "$BUILD.gpu_tests.log" || true)
echo "tests skipped: $SKIPPED"
grep -hE "^\s+[0-9]+ - .*\((Failed|Timeout|SEGFAULT|Subprocess aborted|Exception)\)" \
  "$BUILD.gpu_tests.log" || true
for b in "${BENCHES[@]}" runner; do grep -h "^SUMMARY" "$BUILD.bench_$b.log" | sed 's/^SUMMARY /  /'; done
grep -hE " FAIL " "$BUILD".bench_*.log || true
echo "total time: $((SECONDS - START)) s"
if [[ $TEST_RC -ne 0 || ${#BENCH_FAILED[@]} -ne 0 || $SKIPPED -ne 0 ]]; then
  echo "gpu_check: FAILED (ctest rc=$TEST_RC; benches failed: ${BENCH_FAILED[*]:-none}; skipped: $SKIPPED)"
  exit 1
fi
echo "gpu_check: OK"
