#!/usr/bin/env bash
# Fuzzing with libFuzzer (issue 10): builds the fuzz targets with clang, ASan and UBSan (preset
# `fuzz`), then runs each for SECONDS seconds (default 60), starting from the corpus committed in
# fuzz/corpus/<target>/. New interesting inputs go to build-fuzz/corpus/<target>/ (not to the
# repository), crashes to build-fuzz/artifacts/. Prints the executions each target reached and
# exits non-zero if any target found a crash, a leak, a sanitizer report or an uncaught exception.
#
#   scripts/fuzz.sh 60          # what CI runs
#   build-fuzz/bin/fuzz_workload_reader build-fuzz/artifacts/crash-...   # replay a finding
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
case "$seconds" in ''|*[!0-9]*) echo "usage: scripts/fuzz.sh SECONDS" >&2; exit 2;; esac

scripts/setup.sh --fuzz  # clang and libFuzzer, only for this step (a no-op when installed)
cmake --preset fuzz >/dev/null
cmake --build --preset fuzz

targets=(model_loader tokenizer_loader tokenizer_encode workload_reader gguf_reader gbnf_compile
         regex_compile json_schema_compile maskbench_reader)
declare -A max_len=([model_loader]=4096 [tokenizer_loader]=8192 [tokenizer_encode]=4096
                    [workload_reader]=4096 [gguf_reader]=8192 [gbnf_compile]=2048
                    [regex_compile]=1024 [json_schema_compile]=2048 [maskbench_reader]=4096)
mkdir -p build-fuzz/artifacts
status=0
summary=()
for t in "${targets[@]}"; do
  mkdir -p "build-fuzz/corpus/$t"
  log="build-fuzz/fuzz_$t.log"
  echo "== fuzz_$t for ${seconds} s"
  # -timeout: one input taking over 10 s is a hang; -rss_limit_mb: the loaders must not balloon.
  if ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
     "build-fuzz/bin/fuzz_$t" -max_total_time="$seconds" -max_len="${max_len[$t]}" \
       -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
       -artifact_prefix="build-fuzz/artifacts/$t-" \
       "build-fuzz/corpus/$t" "fuzz/corpus/$t" > "$log" 2>&1; then
    result=ok
  else
    result="FOUND A PROBLEM (see $log and build-fuzz/artifacts/)"
    status=1
    tail -40 "$log"
  fi
  execs=$(grep -o 'Done [0-9]* runs' "$log" | grep -o '[0-9]*' || echo '?')
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*' || echo '?')
  summary+=("$(printf '  fuzz_%-18s %12s executions in %s s, coverage %s edges: %s' "$t" "$execs" "$seconds" "$cov" "$result")")
done
echo "== fuzzing summary"
printf '%s\n' "${summary[@]}"
exit $status
