#!/usr/bin/env bash
# Chapter 10's two measured comparisons, each from one run of this script: medians of repeated,
# alternating runs, with their spread (± half the range, in percent of the median).
#
#   bench/bench_serving_compare.sh http-cost MODEL [MODEL...]
#   bench/bench_serving_compare.sh llama-server MODEL
#
# http-cost: what the HTTP layer costs at saturation. One engine configuration on both sides:
#   chapter 04's continuous scheduler over chapter 05's paged KV (the same --kv-memory, blocks
#   of 16, no prefix cache, F32 KV), the same --max-seqs and --max-batched-tokens, the same
#   trace (every request at once, greedy, ignore_eos), the same thread count. In-process:
#   ch05_paged_attention --allocator paged; over HTTP: ch10_serving --cache off, driven by
#   bench_serving. Prints each side's output throughput and the median of the per-pair ratios
#   HTTP / in-process (the goal: above 0.95).
# llama-server: ch10_serving against llama-server on the same GGUF file, the same trace and the
#   same client (bench_serving), both with THREADS threads and 16 slots: goodput and p99 TTFT at
#   a load below saturation (LOW_LOAD), output throughput at saturation (SATURATION).
# Environment: INFERLAB_BUILD (default build), REPEATS (default 3), THREADS (default 1),
#   KV_MIB (default 256), BENCH_PORT (default 18480; llama-server gets the next one),
#   LLAMA_SERVER (default llama-server on PATH), SATURATION and LOW_LOAD (trace flags for the
#   llama-server comparison; defaults below), LOADS (default "low saturation": which of the two
#   to run). A model is a path or a name in $INFERLAB_MODELS.
# Not run by CI or ctest: it takes minutes, and the llama-server side needs a llama.cpp build.
set -euo pipefail

# The usage is the comment block at the top of this file.
usage() {
  awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0" >&2
  exit 2
}
case ${1:-} in
  http-cost | llama-server) mode=$1 ;;
  *) usage ;;
esac
[[ $# -ge 2 ]] || usage
shift
build=${INFERLAB_BUILD:-build}
repeats=${REPEATS:-3}
threads=${THREADS:-1}
kv_mib=${KV_MIB:-256}
port=${BENCH_PORT:-18480}
llama_port=$((port + 1))
llama_server=${LLAMA_SERVER:-llama-server}
saturation=${SATURATION:-"--requests 32 --prompt-lens uniform:16:128 --output-lens fixed:32 \
--workload-seed 1 --rate 8"}
low_load=${LOW_LOAD:-"--requests 12 --prompt-lens uniform:16:128 --output-lens fixed:32 \
--workload-seed 1 --rate 0.2"}
loads=${LOADS:-low saturation}
slo="--goodput ttft:2000 tpot:500"
engine="--max-seqs 16 --max-batched-tokens 512"
for tool in ch05_paged_attention ch10_serving bench_serving; do
  [[ -x $build/bin/$tool ]] || { echo "error: $build/bin/$tool is not built" >&2; exit 1; }
done
command -v jq > /dev/null || { echo "error: jq is needed to read the JSON results" >&2; exit 1; }
export OMP_NUM_THREADS=$threads
work=$(mktemp -d)
server_pid=
cleanup() {
  [[ -z $server_pid ]] || kill "$server_pid" 2> /dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

resolve_model() {
  if [[ -f $1 ]]; then echo "$1"; return; fi
  local named=${INFERLAB_MODELS:-models}/$1
  [[ -f $named ]] || { echo "error: model $1 not found (nor $named)" >&2; exit 1; }
  echo "$named"
}

# start_server NAME PORT COMMAND...: runs COMMAND in the background until GET /health is 200.
start_server() {
  local name=$1 p=$2
  shift 2
  "$@" > "$work/$name.log" 2>&1 &
  server_pid=$!
  for _ in $(seq 600); do
    curl -sf "http://127.0.0.1:$p/health" > /dev/null 2>&1 && return
    kill -0 "$server_pid" 2> /dev/null ||
      { echo "error: $name exited:" >&2; tail -5 "$work/$name.log" >&2; exit 1; }
    sleep 0.5
  done
  echo "error: $name did not become healthy in 300 s" >&2
  exit 1
}

stop_server() {
  kill -INT "$server_pid"
  wait "$server_pid" || true
  server_pid=
}

# bench PORT OUT TRACE...: one bench_serving run, its JSON in OUT; every request must complete.
bench() {
  local p=$1 out=$2
  shift 2
  # shellcheck disable=SC2086
  "$build/bin/bench_serving" --base-url "http://127.0.0.1:$p" "$@" $slo --json > "$out"
  local completed requests
  completed=$(jq .completed "$out")
  requests=$(jq '.completed + .failed + .rejected + .disconnected' "$out")
  [[ $completed == "$requests" ]] ||
    { echo "error: $completed of $requests requests completed ($out)" >&2; exit 1; }
}

# stats VALUES...: "median (±half range %)" of the values.
stats() {
  printf '%s\n' "$@" | sort -g | awk '{v[NR] = $1} END {
    m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
    printf "%.4g (±%.0f%%)", m, m ? 50 * (v[NR] - v[1]) / m : 0 }'
}

http_cost() {
  local model=$1 trace in_process=() over_http=() ratio=()
  # A tiny model runs in milliseconds: a longer trace so that a run lasts seconds.
  if [[ $(basename "$model") == stories260K* ]]; then
    trace="--requests 64 --prompt-lens uniform:16:128 --output-lens fixed:128 --workload-seed 1"
  else
    trace="--requests 32 --prompt-lens uniform:16:128 --output-lens fixed:32 --workload-seed 1"
  fi
  trace+=" --rate 0"
  echo "== HTTP cost: $(basename "$model"), $threads thread(s), $engine, paged KV $kv_mib MiB"
  echo "   trace: $trace"
  for rep in $(seq "$repeats"); do
    # shellcheck disable=SC2086
    "$build/bin/ch05_paged_attention" --model "$model" --threads "$threads" $trace $engine \
      --allocator paged --kv-memory "$kv_mib" --block-size 16 --kv-dtype f32 --temperature 0 \
      --reps 1 --json > "$work/in.json"
    in_process+=("$(jq .paged.summary.throughput_tokens_per_s "$work/in.json")")
    # shellcheck disable=SC2086
    start_server ch10_serving "$port" "$build/bin/ch10_serving" --model "$model" \
      --threads "$threads" --port "$port" $engine --kv-memory "$kv_mib" --block-size 16 \
      --cache off --kv-dtype f32
    # shellcheck disable=SC2086
    bench "$port" "$work/http.json" $trace
    stop_server
    over_http+=("$(jq .output_throughput "$work/http.json")")
    ratio+=("$(awk -v h="${over_http[-1]}" -v i="${in_process[-1]}" 'BEGIN {print h / i}')")
    printf '   run %s: in-process %.4g tok/s, HTTP %.4g tok/s\n' "$rep" "${in_process[-1]}" \
      "${over_http[-1]}"
  done
  echo "   output throughput in-process (tok/s): $(stats "${in_process[@]}")"
  echo "   output throughput over HTTP (tok/s):  $(stats "${over_http[@]}")"
  echo "   ratio HTTP / in-process:              $(stats "${ratio[@]}")  (goal: >= 0.95)"
}

llama_compare() {
  local model=$1
  command -v "$llama_server" > /dev/null ||
    { echo "error: $llama_server not found (set LLAMA_SERVER)" >&2; exit 1; }
  local -A result
  local load metric side
  echo "== ch10_serving vs llama-server: $(basename "$model"), $threads thread(s), 16 slots"
  for load in $loads; do
    [[ $load == low || $load == saturation ]] || { echo "error: LOADS: '$load'" >&2; exit 2; }
    local trace=$low_load
    [[ $load == saturation ]] && trace=$saturation
    echo "   $load: $trace"
    for rep in $(seq "$repeats"); do
      # shellcheck disable=SC2086
      start_server ch10_serving "$port" "$build/bin/ch10_serving" --model "$model" \
        --threads "$threads" --port "$port" $engine --kv-memory "$kv_mib"
      # shellcheck disable=SC2086
      bench "$port" "$work/inferlab.json" $trace
      stop_server
      # --no-repack: its repacked kernels use AMX where the CPU reports it, and a VM that
      # reports AMX without allowing it kills the server with SIGILL.
      start_server llama-server "$llama_port" "$llama_server" -m "$model" --host 127.0.0.1 \
        --port "$llama_port" -t "$threads" -tb "$threads" -np 16 -c 8192 --no-webui --no-repack
      # shellcheck disable=SC2086
      bench "$llama_port" "$work/llama.json" $trace
      stop_server
      for side in inferlab llama; do
        for metric in request_goodput p99_ttft_ms output_throughput median_tpot_ms; do
          result[$load.$side.$metric]+=" $(jq ".$metric" "$work/$side.json")"
        done
      done
      printf '   run %s: output tok/s InferLab %.4g, llama-server %.4g\n' "$rep" \
        "$(jq .output_throughput "$work/inferlab.json")" \
        "$(jq .output_throughput "$work/llama.json")"
    done
  done
  printf '   %-32s %-22s %-22s\n' "load / metric" "ch10_serving" "llama-server"
  for load in $loads; do
    for metric in request_goodput p99_ttft_ms output_throughput median_tpot_ms; do
      # shellcheck disable=SC2086
      printf '   %-32s %-22s %-22s\n' "$load / $metric" \
        "$(stats ${result[$load.inferlab.$metric]})" "$(stats ${result[$load.llama.$metric]})"
    done
  done
}

echo "machine: $(nproc --all) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg) (at the start)"
if [[ $mode == http-cost ]]; then
  for m in "$@"; do http_cost "$(resolve_model "$m")"; done
else
  [[ $# -eq 1 ]] || usage
  llama_compare "$(resolve_model "$1")"
fi
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
