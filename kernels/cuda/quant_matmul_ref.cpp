// The CPU references of the CUDA quantized matmul (quant_matmul.cu): the same activation blocks
// and integer block dots, added in increasing block order.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "inferlab/kernels/cuda/quant_matmul_cuda.hpp"
#include "inferlab/kernels/error.hpp"
#include "../src/quant_dot.hpp"

namespace inferlab::kernels {

namespace {

constexpr int kBlock = 32;

}  // namespace

bool quant_cuda_supports(TensorType type) {
  return type == TensorType::kQ8_0 || type == TensorType::kQ4_0;
}

void matmul_quant_cuda_ref(float* y, const float* x, const std::uint8_t* w, TensorType type,
                           int T, int n, int d) {
  if (!quant_cuda_supports(type)) {
    throw Error("matmul_quant_cuda_ref: no CUDA kernel for " +
                ggml_type_name(std::uint32_t(type)) + " (Q8_0, Q4_0)");
  }
  if (T < 1 || d < 1 || n < 1 || n % kBlock != 0) {
    throw Error("matmul_quant_cuda_ref: bad shape T " + std::to_string(T) + ", n " +
                std::to_string(n) + ", d " + std::to_string(d));
  }
  const int nb = n / kBlock;
  const std::size_t row_bytes = tensor_bytes(type, std::size_t(n));
  std::vector<std::int8_t> q(static_cast<std::size_t>(n));
  std::vector<float> scale(static_cast<std::size_t>(nb));
  for (int t = 0; t < T; ++t) {
    const float* xt = x + std::size_t(t) * n;
    for (int b = 0; b < nb; ++b) {
      float amax = 0.0f;
      for (int j = 0; j < kBlock; ++j) amax = std::max(amax, std::fabs(xt[b * kBlock + j]));
      const float dq = amax / 127.0f, id = dq != 0.0f ? 1.0f / dq : 0.0f;
      scale[std::size_t(b)] = dq;
      for (int j = 0; j < kBlock; ++j)
        q[std::size_t(b * kBlock + j)] = std::int8_t(std::nearbyint(xt[b * kBlock + j] * id));
    }
    for (int o = 0; o < d; ++o) {
      const std::uint8_t* row = w + std::size_t(o) * row_bytes;
      float acc = 0.0f;
      for (int b = 0; b < nb; ++b) {
        const std::uint8_t* blk = row + std::size_t(b) * block_bytes(type);
        int isum = 0;
        for (int j = 0; j < kBlock; ++j) {
          const int wj = type == TensorType::kQ8_0
                             ? int(std::int8_t(blk[2 + j]))
                             : int(j < 16 ? blk[2 + j] & 0x0F : blk[2 + j - 16] >> 4) - 8;
          isum += wj * q[std::size_t(b * kBlock + j)];
        }
        acc += quant_dot::load_half(blk) * scale[std::size_t(b)] * float(isum);
      }
      y[std::size_t(t) * d + std::size_t(o)] = acc;
    }
  }
}

void dequantize_rows_cuda_ref(float* x, const std::uint8_t* w, TensorType type, const int* rows,
                              int T, int n, int d) {
  if (!quant_cuda_supports(type)) {
    throw Error("dequantize_rows_cuda_ref: no CUDA kernel for " +
                ggml_type_name(std::uint32_t(type)) + " (Q8_0, Q4_0)");
  }
  if (T < 1 || d < 1 || n < 1 || n % kBlock != 0) {
    throw Error("dequantize_rows_cuda_ref: bad shape T " + std::to_string(T) + ", n " +
                std::to_string(n) + ", d " + std::to_string(d));
  }
  const std::size_t row_bytes = tensor_bytes(type, std::size_t(n));
  for (int t = 0; t < T; ++t) {
    if (rows[t] < 0 || rows[t] >= d) {
      throw Error("dequantize_rows_cuda_ref: row " + std::to_string(rows[t]) + " outside [0, " +
                  std::to_string(d) + ")");
    }
    dequantize_ref(type, w + std::size_t(rows[t]) * row_bytes, x + std::size_t(t) * n,
                   std::size_t(n));
  }
}

}  // namespace inferlab::kernels
