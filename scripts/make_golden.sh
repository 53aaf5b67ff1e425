#!/usr/bin/env bash
# Regenerates the golden reference outputs the tests compare against, from the reference
# programs themselves, into tests/golden/ (git-ignored; the tests look there by default):
#
#   stories260K_greedy.json       karpathy/llama2.c run.c's greedy tokens and text (6 prompts)
#   stories260K_logits.txt        run.c's logits at each of 8 positions
#   llama2_tokenizer_encode.json  SentencePiece's ids for 12 texts (llama2.c's encode() agrees)
#
# Needs the internet (git clone of llama2.c; the models through scripts/download_models.sh when
# they are not already here), git, a C compiler, python3 and its sentencepiece module (Debian:
# python3-sentencepiece). None of this is needed to build or test InferLab: without the golden
# files the golden tests are skipped and the invariant tests run on a synthetic model.
# tests/golden/README.md says what each file holds and how it was made.
#
#   scripts/make_golden.sh                  writes tests/golden/
#   scripts/make_golden.sh --out DIR        writes DIR instead (then: export INFERLAB_GOLDEN=DIR)
#   scripts/make_golden.sh --llama2c DIR    uses that llama2.c checkout instead of cloning one
#   scripts/make_golden.sh --compare DIR    also compares the result with the golden files in DIR
set -euo pipefail

# The llama2.c commit the reference outputs were made with (tests/golden/README.md).
llama2c_repo=https://github.com/karpathy/llama2.c
llama2c_commit=${LLAMA2C_COMMIT:-350e04f}

usage() {
  sed -n '2,19s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"
}

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out="$repo_root/tests/golden"
llama2c=""
compare=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --out|--llama2c|--compare)
      [[ $# -ge 2 ]] || { echo "error: $1 needs a folder" >&2; exit 2; }
      case "$1" in
        --out) out=$2 ;;
        --llama2c) llama2c=$2 ;;
        --compare) compare=$2 ;;
      esac
      shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "error: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
  esac
  shift
done

need() { command -v "$1" >/dev/null 2>&1 || { echo "error: $1 not found ($2)" >&2; exit 1; }; }
need python3 "Debian: python3"
need sha256sum "Debian: coreutils"
cc=${CC:-cc}
need "$cc" "Debian: gcc"
python3 -c 'import sentencepiece' 2>/dev/null || {
  echo "error: the Python module sentencepiece is missing (Debian: sudo apt-get install" \
       "python3-sentencepiece, or pip install sentencepiece in a virtual environment)" >&2
  exit 1
}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# 1. The models: $INFERLAB_MODELS or models/, downloaded there when missing, checksums verified.
models=${INFERLAB_MODELS:-$repo_root/models}
if [[ ! -f "$models/stories260K.bin" || ! -f "$models/tok512.bin" ]]; then
  "$repo_root/scripts/download_models.sh"
  models="$repo_root/models"
fi
check_sha() {  # file, expected SHA-256
  local got
  got=$(sha256sum "$1" | cut -d' ' -f1)
  [[ "$got" == "$2" ]] || { echo "error: $1 has SHA-256 $got, expected $2" >&2; exit 1; }
}
check_sha "$models/stories260K.bin" b0a507e7ad0f626624f17112325e66691f9076d622e1d3274d103d00299f2696
check_sha "$models/tok512.bin" 037cb335abb25d1fa9e8ecae30ed2a3a8ace9302862ebcdc05d51a6bbb10c312

# 2. llama2.c at the pinned commit (it also holds the Llama 2 tokenizer, .bin and .model).
if [[ -z "$llama2c" ]]; then
  need git "Debian: git"
  llama2c="$work/llama2.c"
  echo "Cloning $llama2c_repo at $llama2c_commit"
  git clone --quiet "$llama2c_repo" "$llama2c"
  git -C "$llama2c" -c advice.detachedHead=false checkout --quiet "$llama2c_commit"
fi
[[ -f "$llama2c/run.c" ]] || { echo "error: no run.c in $llama2c" >&2; exit 1; }
commit=$(git -C "$llama2c" rev-parse HEAD 2>/dev/null || echo "unknown (not a git checkout)")
echo "llama2.c: $llama2c, commit $commit"
check_sha "$llama2c/tokenizer.bin" 50a52ef822ee9e83de5ce9d0be0a025a773d019437f58b5ff9dcafb063ece361
check_sha "$llama2c/tokenizer.model" 9e556afd44213b6bd1be2b850ebbbd98f5481437a8021afaf58ee7fb1818d347

# 3. Build run.c as its Makefile's `make run` does, and the dump tool around the same run.c.
"$cc" -O3 -o "$work/run" "$llama2c/run.c" -lm
"$cc" -O3 -w -I "$llama2c" -o "$work/llama2c_dump" "$repo_root/scripts/golden/llama2c_dump.c" -lm

# 4. Run them and write the files (scripts/golden/write_golden.py checks each reference against
#    the other before writing).
echo "Writing $out"
compare_args=()
[[ -n "$compare" ]] && compare_args=(--compare "$compare")
python3 "$repo_root/scripts/golden/write_golden.py" \
  --run "$work/run" --dump "$work/llama2c_dump" \
  --model "$models/stories260K.bin" --tok512 "$models/tok512.bin" \
  --tokenizer-bin "$llama2c/tokenizer.bin" --tokenizer-model "$llama2c/tokenizer.model" \
  --commit "$commit" --work "$work" --out "$out" "${compare_args[@]}"

if [[ "$out" -ef "$repo_root/tests/golden" ]]; then
  echo "Done. The tests find these files in tests/golden/ without any option."
else
  echo "Done. Point the tests at them with: export INFERLAB_GOLDEN=$out"
fi
