// The CPU reference of the CUDA quantized matmul (quant_matmul.cu): the same activation blocks
// and integer block dots, added in increasing block order.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "inferlab/kernels/cuda/quant_matmul_cuda.hpp"
#include "inferlab/kernels/error.hpp"

namespace inferlab::kernels {

namespace {

constexpr int kBlock = 32;

float half_bits_to_float(const std::uint8_t* p) {
  std::uint16_t h;
  std::memcpy(&h, p, 2);
  const std::uint32_t sign = std::uint32_t(h & 0x8000) << 16;
  std::uint32_t exp = (h >> 10) & 0x1F, man = h & 0x3FF, bits;
  if (exp == 0x1F) {
    bits = sign | 0x7F800000u | (man << 13);
  } else if (exp != 0) {
    bits = sign | ((exp + 112) << 23) | (man << 13);
  } else if (man == 0) {
    bits = sign;
  } else {
    exp = 113;
    while ((man & 0x400) == 0) {
      man <<= 1;
      --exp;
    }
    bits = sign | (exp << 23) | ((man & 0x3FF) << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

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
        acc += half_bits_to_float(blk) * scale[std::size_t(b)] * float(isum);
      }
      y[std::size_t(t) * d + std::size_t(o)] = acc;
    }
  }
}

}  // namespace inferlab::kernels
