// The quantized matmul on the GPU (quant_matmul_cuda.hpp): Q8_0 and Q4_0 weights in GGUF
// block layout, activations quantized once per token to int8 blocks of 32, integer dot
// products with __dp4a (4 byte products added into an int32 per instruction); and the rows of
// such a matrix dequantized (the embedding lookup of a table kept in blocks).
#include <cuda_fp16.h>

#include <cstdint>
#include <string>

#include "common.cuh"
#include "inferlab/kernels/cuda/quant_matmul_cuda.hpp"

namespace inferlab::kernels {

namespace {

using cuda::detail::ceil_div;
using cuda::detail::kWarpSize;
constexpr int kBlock = 32;
constexpr int kWarpsPerBlock = 4;

// One warp per activation block: q = x / d rounded to nearest even, d = amax / 127.
__global__ void quantize_activations_kernel(std::int8_t* q, float* scale, const float* x,
                                            std::size_t blocks) {
  const std::size_t b = (std::size_t(blockIdx.x) * blockDim.x + threadIdx.x) / kWarpSize;
  const int lane = threadIdx.x % kWarpSize;
  if (b >= blocks) return;
  const float v = x[b * kBlock + lane];
  const float amax = cuda::detail::warp_max(fabsf(v));
  const float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
  q[b * kBlock + lane] = std::int8_t(rintf(v * id));
  if (lane == 0) scale[b] = d;
}

__device__ inline float load_half(const std::uint8_t* p) {
  const unsigned short bits = *reinterpret_cast<const unsigned short*>(p);
  return __half2float(__ushort_as_half(bits));
}

// Four bytes from a 2-byte aligned address (a block's data follows its 2-byte scale).
__device__ inline int load_int_2(const std::uint8_t* p) {
  const auto* s = reinterpret_cast<const unsigned short*>(p);
  return int(unsigned(s[0]) | (unsigned(s[1]) << 16));
}

// y[t, o]: warp (o, t); lane l takes blocks l, l + 32, ...
template <TensorType kType>
__global__ void matmul_quant_kernel(float* y, const std::int8_t* q, const float* scale,
                                    const std::uint8_t* w, int n, int d) {
  const int o = blockIdx.x * kWarpsPerBlock + threadIdx.x / kWarpSize;
  const int t = blockIdx.y;
  const int lane = threadIdx.x % kWarpSize;
  if (o >= d) return;
  const int nb = n / kBlock;
  constexpr int kBytes = kType == TensorType::kQ8_0 ? 34 : 18;
  const std::uint8_t* row = w + std::size_t(o) * std::size_t(nb) * kBytes;
  const std::int8_t* qt = q + std::size_t(t) * n;
  const float* st = scale + std::size_t(t) * nb;
  float acc = 0.0f;
  for (int b = lane; b < nb; b += kWarpSize) {
    const std::uint8_t* blk = row + std::size_t(b) * kBytes;
    const int* a = reinterpret_cast<const int*>(qt + std::size_t(b) * kBlock);
    int isum = 0;
    if constexpr (kType == TensorType::kQ8_0) {
      for (int i = 0; i < 8; ++i) isum = __dp4a(load_int_2(blk + 2 + 4 * i), a[i], isum);
    } else {
      // Byte j holds element j (low nibble) and j + 16 (high): 4 bytes give 4 + 4 elements.
      for (int i = 0; i < 4; ++i) {
        const int packed = load_int_2(blk + 2 + 4 * i);
        // Per-byte subtraction (no borrow between bytes): each byte becomes q - 8 in [-8, 7].
        const int lo = int(__vsub4(unsigned(packed) & 0x0F0F0F0Fu, 0x08080808u));
        const int hi = int(__vsub4((unsigned(packed) >> 4) & 0x0F0F0F0Fu, 0x08080808u));
        isum = __dp4a(lo, a[i], isum);
        isum = __dp4a(hi, a[i + 4], isum);
      }
    }
    acc += load_half(blk) * st[b] * float(isum);
  }
  acc = cuda::detail::warp_sum(acc);
  if (lane == 0) y[std::size_t(t) * d + std::size_t(o)] = acc;
}

// x[t, i] = W[rows[t], i]: one thread per output number, its block's scale times its value.
template <TensorType kType>
__global__ void dequantize_rows_kernel(float* x, const std::uint8_t* w, const int* rows, int T,
                                       int n, int d) {
  const std::size_t idx = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= std::size_t(T) * n) return;
  const int t = int(idx / n), i = int(idx % n);
  const int row = rows[t];
  if (row < 0 || row >= d) {  // the host validated the ids: make a bug loud
    x[idx] = NAN;
    return;
  }
  constexpr int kBytes = kType == TensorType::kQ8_0 ? 34 : 18;
  const std::uint8_t* blk =
      w + (std::size_t(row) * std::size_t(n / kBlock) + std::size_t(i / kBlock)) * kBytes;
  const int j = i % kBlock;
  int q;
  if constexpr (kType == TensorType::kQ8_0) {
    q = int(std::int8_t(blk[2 + j]));
  } else {
    // Byte j holds element j (low nibble) and j + 16 (high).
    q = int(j < kBlock / 2 ? blk[2 + j] & 0x0F : blk[2 + j - kBlock / 2] >> 4) - 8;
  }
  x[idx] = float(q) * load_half(blk);
}

}  // namespace

void dequantize_rows_cuda(float* x, const std::uint8_t* w, TensorType type, const int* rows, int T,
                          int n, int d, CUstream_st* stream) {
  cuda::detail::require(quant_cuda_supports(type), "dequantize_rows_cuda",
                        "weights must be stored as Q8_0 or Q4_0");
  cuda::detail::require(T > 0 && n > 0 && d > 0 && n % kBlock == 0, "dequantize_rows_cuda",
                        "T, d must be positive and n a positive multiple of 32");
  const std::size_t count = std::size_t(T) * std::size_t(n);
  if (type == TensorType::kQ8_0) {
    dequantize_rows_kernel<TensorType::kQ8_0>
        <<<ceil_div(count, 256), 256, 0, stream>>>(x, w, rows, T, n, d);
  } else {
    dequantize_rows_kernel<TensorType::kQ4_0>
        <<<ceil_div(count, 256), 256, 0, stream>>>(x, w, rows, T, n, d);
  }
  INFERLAB_CUDA_CHECK_LAUNCH();
}

namespace {
// The workspace: T * n int8 activations, then (from a 256-byte boundary) one float scale per
// block of 32 of them.
std::size_t scales_offset(int T, int n) {
  return (std::size_t(T) * std::size_t(n) + 255) / 256 * 256;
}
}  // namespace

std::size_t matmul_quant_cuda_workspace_bytes(int T, int n) {
  if (T <= 0 || n <= 0) return 0;
  return scales_offset(T, n) + std::size_t(T) * std::size_t(n / kBlock) * sizeof(float);
}

void matmul_quant_cuda(float* y, const float* x, const std::uint8_t* w, TensorType type, int T,
                       int n, int d, void* workspace, std::size_t workspace_bytes,
                       CUstream_st* stream) {
  cuda::detail::require(quant_cuda_supports(type), "matmul_quant_cuda",
                        "weights must be stored as Q8_0 or Q4_0");
  cuda::detail::require(T > 0 && n > 0 && d > 0 && n % kBlock == 0, "matmul_quant_cuda",
                        "T, d must be positive and n a positive multiple of 32");
  cuda::detail::require(workspace != nullptr &&
                            workspace_bytes >= matmul_quant_cuda_workspace_bytes(T, n),
                        "matmul_quant_cuda", "the workspace is smaller than T * n * 9 / 8 bytes");
  const std::size_t blocks = std::size_t(T) * std::size_t(n / kBlock);
  auto* const q = static_cast<std::int8_t*>(workspace);
  auto* const scale = reinterpret_cast<float*>(static_cast<char*>(workspace) + scales_offset(T, n));
  quantize_activations_kernel<<<ceil_div(blocks * kWarpSize, 256), 256, 0, stream>>>(
      q, scale, x, blocks);
  INFERLAB_CUDA_CHECK_LAUNCH();
  const dim3 grid(ceil_div(std::size_t(d), kWarpsPerBlock), unsigned(T));
  const int threads = kWarpsPerBlock * kWarpSize;
  if (type == TensorType::kQ8_0) {
    matmul_quant_kernel<TensorType::kQ8_0><<<grid, threads, 0, stream>>>(y, q, scale, w, n, d);
  } else {
    matmul_quant_kernel<TensorType::kQ4_0><<<grid, threads, 0, stream>>>(y, q, scale, w, n, d);
  }
  INFERLAB_CUDA_CHECK_LAUNCH();
}

void matmul_quant_cuda(float* y, const float* x, const std::uint8_t* w, TensorType type, int T,
                       int n, int d, CUstream_st* stream) {
  cuda::detail::require(T > 0 && n > 0, "matmul_quant_cuda",
                        "T, d must be positive and n a positive multiple of 32");
  cuda::DeviceBuffer<std::uint8_t> workspace(matmul_quant_cuda_workspace_bytes(T, n));
  matmul_quant_cuda(y, x, w, type, T, n, d, workspace.data(), workspace.size(), stream);
  // The workspace is freed when this returns: wait for the kernels that read it.
  INFERLAB_CUDA_CHECK(cudaStreamSynchronize(stream));
}

}  // namespace inferlab::kernels
