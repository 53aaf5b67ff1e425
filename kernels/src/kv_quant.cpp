// KV cache storage types: storing rows and loading them back.
#include "inferlab/kernels/kv_quant.hpp"

#include <algorithm>
#include <cmath>

#include <Eigen/Core>  // Eigen::half: IEEE binary16 with round-to-nearest-even conversions

namespace inferlab::kernels {

std::size_t kv_element_bytes(DType type) {
  require_kv_storage(type, "kv_element_bytes");
  return std::size_t(dtype_bytes(type));
}

void kv_store_rows(DType type, void* data, float* scales, const float* x, int rows, int n_kv_heads,
                   int head_size) {
  const std::size_t n = std::size_t(rows) * n_kv_heads * head_size;
  switch (type) {
    case DType::f32:
      std::copy(x, x + n, static_cast<float*>(data));
      return;
    case DType::f16: {
      auto* h = static_cast<Eigen::half*>(data);
      for (std::size_t i = 0; i < n; ++i) h[i] = Eigen::half(x[i]);
      return;
    }
    case DType::int8: {
      auto* q = static_cast<std::int8_t*>(data);
      // Symmetric quantization per (row, head): the head's largest magnitude maps to 127, so
      // each head keeps its own range (heads differ by orders of magnitude in real models).
      for (std::size_t rh = 0; rh < std::size_t(rows) * n_kv_heads; ++rh) {
        const float* xs = x + rh * head_size;
        float amax = 0.0f;
        for (int i = 0; i < head_size; ++i) amax = std::max(amax, std::fabs(xs[i]));
        const float scale = amax / 127.0f;
        const float inv = scale > 0.0f ? 1.0f / scale : 0.0f;
        scales[rh] = scale;
        for (int i = 0; i < head_size; ++i)
          q[rh * head_size + i] = static_cast<std::int8_t>(std::lrint(xs[i] * inv));
      }
      return;
    }
    default:
      require_kv_storage(type, "kv_store_rows");  // bf16, fp8, int4: throws
  }
}

void kv_load_rows(DType type, float* out, const void* data, const float* scales, int rows,
                  int n_kv_heads, int head_size) {
  const std::size_t n = std::size_t(rows) * n_kv_heads * head_size;
  switch (type) {
    case DType::f32: {
      const auto* f = static_cast<const float*>(data);
      std::copy(f, f + n, out);
      return;
    }
    case DType::f16: {
      const auto* h = static_cast<const Eigen::half*>(data);
      for (std::size_t i = 0; i < n; ++i) out[i] = float(h[i]);
      return;
    }
    case DType::int8: {
      const auto* q = static_cast<const std::int8_t*>(data);
      for (std::size_t i = 0; i < n; ++i) out[i] = scales[i / head_size] * float(q[i]);
      return;
    }
    default:
      require_kv_storage(type, "kv_load_rows");  // bf16, fp8, int4: throws
  }
}

}  // namespace inferlab::kernels
