# shellcheck shell=bash
# What the scripts that run llama.cpp beside InferLab share (sourced, not run):
#   llama_extra: the flags every llama.cpp tool gets on this CPU;
#   run FILE COMMAND...: COMMAND's output in FILE, its messages in FILE's .log, and a stop with
#   the tool's name and that log when it fails.

# llama.cpp's AMX matmul (compiled in by GGML_NATIVE on an AMX CPU) raises SIGILL on the first
# quantized matmul here: with --no-repack quantized weights never go to it.
# shellcheck disable=SC2034  # used by the scripts that source this file
llama_extra=()
if grep -qw amx_tile /proc/cpuinfo 2> /dev/null; then llama_extra=(--no-repack); fi

run() {  # FILE, command...
  local out=$1
  shift
  "$@" > "$out" 2> "${out%.*}.log" ||
    { echo "error: $(basename "$1") failed, see ${out%.*}.log" >&2; exit 1; }
}
