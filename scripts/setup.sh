#!/usr/bin/env bash
# Installs everything InferLab needs to build, test and document itself on a Debian/Ubuntu
# machine. Safe to re-run: packages already present are left alone.
# With --fuzz it also installs clang for the libFuzzer targets (scripts/fuzz.sh).
# The CUDA toolkit is optional and not installed here: when nvcc is on the PATH (or at
# /usr/local/cuda/bin), the CUDA kernels are built too.
set -euo pipefail

packages=(cmake ninja-build g++ make libomp-dev libeigen3-dev catch2 libcli11-dev
          nlohmann-json3-dev libfmt-dev libpcre2-dev pkgconf doxygen graphviz
          doxygen-awesome-css libjs-mathjax)
packages+=(libcpp-httplib-dev)  # chapter 10: the HTTP server and bench_serving (cpp-httplib)
# Only for fuzzing (scripts/fuzz.sh): clang and its libFuzzer runtime.
if [ "${1:-}" = "--fuzz" ]; then
  packages+=(clang libclang-rt-dev)
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#packages[@]} packages already installed"
  exit 0
fi
sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
echo "setup: installing ${missing[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
echo "setup: done"
