// The SwiGLU gate on the GPU: out = silu(gate) * up, silu(g) = g / (1 + e^-g).
//
// v1  one thread per element in a grid-stride loop (a capped grid walks any n). Elementwise
//     and bandwidth-bound: 12 bytes moved per 5 FLOPs; neighbouring threads touch
//     neighbouring floats, so every access is coalesced. expf, not __expf, to match the CPU.
#include <algorithm>

#include "common.cuh"
#include "inferlab/kernels/cuda/swiglu_cuda.hpp"

namespace inferlab::kernels {

namespace {

__global__ void swiglu_v1_kernel(float* out, const float* gate, const float* up, long n) {
  const long stride = long(gridDim.x) * blockDim.x;
  for (long i = long(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const float g = gate[i];
    out[i] = g / (1.0f + expf(-g)) * up[i];
  }
}

}  // namespace

int swiglu_cuda_versions() { return 1; }

void swiglu_cuda(int version, float* out, const float* gate, const float* up, long n,
                 CUstream_st* stream) {
  cuda::detail::require(n >= 1, "swiglu_cuda", "n must be >= 1");
  switch (version) {
    case 1: {
      constexpr int kThreads = 256;
      const unsigned blocks = std::min(cuda::detail::ceil_div(std::size_t(n), kThreads), 65536u);
      swiglu_v1_kernel<<<blocks, kThreads, 0, stream>>>(out, gate, up, n);
      INFERLAB_CUDA_CHECK_LAUNCH();
      break;
    }
    default:
      cuda::detail::bad_version("swiglu_cuda", version, swiglu_cuda_versions());
  }
}

}  // namespace inferlab::kernels
