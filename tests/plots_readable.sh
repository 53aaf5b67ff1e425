#!/usr/bin/env bash
# Every chapter's plot, as the program saves it with --plot, is readable: each picture
# at most 1,200 px wide, every text inside it, no two texts overlapping. The chapters run in
# their quick or simulated modes; tools/svg_check.cpp reads the saved files back.
#   tests/plots_readable.sh BIN_DIR SKIP_CODE
# Needs the default model and tokenizer ($INFERLAB_MODELS); without them it reports SKIPPED
# (exit SKIP_CODE), or fails when INFERLAB_REQUIRE_MODELS=1.
set -uo pipefail
bin="$1"
skip="${2:-77}"
models="${INFERLAB_MODELS:-$(dirname "$0")/../models}"
if [ ! -f "$models/stories260K.bin" ] || [ ! -f "$models/tok512.bin" ]; then
  if [ "${INFERLAB_REQUIRE_MODELS:-0}" = 1 ]; then echo "required model missing in $models"; exit 1; fi
  echo "SKIPPED: stories260K.bin / tok512.bin not found in $models (set INFERLAB_MODELS)"
  exit "$skip"
fi
export INFERLAB_MODELS="$models"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
run() {  # name, command...: the chapter must succeed and write its plot
  local name="$1"; shift
  if ! "$@" > "$out/$name.log" 2>&1; then
    echo "FAILED to write $name.svg: $*"; tail -5 "$out/$name.log"; exit 1
  fi
}
run ch02 "$bin/ch02_kv_cache" --steps 64 --plot "$out/ch02.svg"
run ch03 "$bin/ch03_roofline" --hardware h100-sxm --plot "$out/ch03.svg"
run ch04 "$bin/ch04_continuous_batching" --clock sim --plot "$out/ch04.svg"
run ch04_real "$bin/ch04_continuous_batching" --clock real --requests 16 --threads 1 \
    --plot "$out/ch04_real.svg"
run ch05 "$bin/ch05_paged_attention" --clock sim --plot "$out/ch05.svg"
run ch06 "$bin/ch06_prefix_cache" --clock sim --plot "$out/ch06.svg"
run ch07 "$bin/ch07_speculative_decoding" --sweep-k --plot "$out/ch07.svg"
run ch07_sim "$bin/ch07_speculative_decoding" --clock sim --plot "$out/ch07_sim.svg"
"$bin/inferlab_svg_check" "$out"/*.svg
