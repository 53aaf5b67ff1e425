#!/usr/bin/env bash
# A CPU run pays nothing for the CUDA backend: no chapter, tool or bench that runs the
# model links the CUDA runtime or cuBLAS; the core loads libinferlab_cuda_backend.so with dlopen
# only when --device cuda asks for it. Checked with ldd on every chapter binary and on the
# benches and tools that use the runner. The GPU tests and the CUDA kernel benches (bench_<op>)
# link the CUDA libraries on purpose and are not checked.
# Usage: no_cuda_link.sh BIN_DIR
set -u
bin=${1:?usage: no_cuda_link.sh BIN_DIR}
fail=0
checked=0
for exe in "$bin"/ch0* "$bin"/bench_forward "$bin"/bench_kv_cache "$bin"/bench_runner; do
  [[ -x $exe ]] || continue
  checked=$((checked + 1))
  linked=$(ldd "$exe" | grep -E 'libcudart|libcublas' || true)
  if [[ -n $linked ]]; then
    echo "FAIL: $(basename "$exe") links the CUDA libraries:"
    echo "$linked"
    fail=$((fail + 1))
  fi
done
if ((checked == 0)); then
  echo "FAIL: no chapter binary found in $bin"
  exit 1
fi
echo "$checked binaries checked, $fail link libcudart or libcublas"
((fail == 0))
