// KV cache storage types: storing, loading, and attention over the stored rows.
#include "inferlab/kernels/kv_quant.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include <Eigen/Core>  // Eigen::half: IEEE binary16 with round-to-nearest-even conversions

#include "inferlab/kernels/attention.hpp"
#include "attend.hpp"

namespace inferlab::kernels {

std::size_t kv_element_bytes(KVType type) {
  switch (type) {
    case KVType::f32: return 4;
    case KVType::f16: return 2;
    case KVType::int8: return 1;
  }
  return 0;
}

void kv_store_rows(KVType type, void* data, float* scales, const float* x, int rows,
                   int n_kv_heads, int head_size) {
  const std::size_t n = std::size_t(rows) * n_kv_heads * head_size;
  switch (type) {
    case KVType::f32:
      std::copy(x, x + n, static_cast<float*>(data));
      return;
    case KVType::f16: {
      auto* h = static_cast<Eigen::half*>(data);
      for (std::size_t i = 0; i < n; ++i) h[i] = Eigen::half(x[i]);
      return;
    }
    case KVType::int8: {
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
  }
}

void kv_load_rows(KVType type, float* out, const void* data, const float* scales, int rows,
                  int n_kv_heads, int head_size) {
  const std::size_t n = std::size_t(rows) * n_kv_heads * head_size;
  switch (type) {
    case KVType::f32: {
      const auto* f = static_cast<const float*>(data);
      std::copy(f, f + n, out);
      return;
    }
    case KVType::f16: {
      const auto* h = static_cast<const Eigen::half*>(data);
      for (std::size_t i = 0; i < n; ++i) out[i] = float(h[i]);
      return;
    }
    case KVType::int8: {
      const auto* q = static_cast<const std::int8_t*>(data);
      for (std::size_t i = 0; i < n; ++i) out[i] = scales[i / head_size] * float(q[i]);
      return;
    }
  }
}

void attention_kv_ref(float* out, const float* q, const KVRowsView& k, const KVRowsView& v,
                      const int* pos, int T, int n_heads, int n_kv_heads, int head_size) {
  int rows = 0;
  for (int t = 0; t < T; ++t) rows = std::max(rows, pos[t] + 1);
  const std::size_t kv_dim = std::size_t(n_kv_heads) * head_size;
  std::vector<float> kf(std::size_t(rows) * kv_dim), vf(kf.size());
  // One row at a time, wherever the view stores it: the reference knows nothing of blocks
  // beyond KVRowsView::row().
  const std::size_t elem = kv_element_bytes(k.type), velem = kv_element_bytes(v.type);
  for (int p = 0; p < rows; ++p) {
    const std::size_t rk = k.row(p), rv = v.row(p);
    kv_load_rows(k.type, &kf[std::size_t(p) * kv_dim],
                 static_cast<const char*>(k.data) + rk * kv_dim * elem,
                 k.scales ? k.scales + rk * n_kv_heads : nullptr, 1, n_kv_heads, head_size);
    kv_load_rows(v.type, &vf[std::size_t(p) * kv_dim],
                 static_cast<const char*>(v.data) + rv * kv_dim * velem,
                 v.scales ? v.scales + rv * n_kv_heads : nullptr, 1, n_kv_heads, head_size);
  }
  attention_ref(out, q, kf.data(), vf.data(), pos, T, n_heads, n_kv_heads, head_size);
}

namespace {

// Row loaders: element i of the head starting at `row_head` (index of (position, KV head)).
struct LoadF16 {
  const Eigen::half* d;
  int hs;
  float scale(std::size_t) const { return 1.0f; }
  float at(std::size_t row_head, int i) const { return float(d[row_head * hs + i]); }
};
struct LoadI8 {
  const std::int8_t* d;
  const float* s;
  int hs;
  // The scale factors out of the dot product: sum(q * s * k8) = s * sum(q * k8).
  float scale(std::size_t row_head) const { return s[row_head]; }
  float at(std::size_t row_head, int i) const { return float(d[row_head * hs + i]); }
};

template <class KLoad>
void dispatch_v(float* out, const float* q, const KLoad& kl, const KVRowsView& v, const int* pos,
                int T, int n_heads, int n_kv_heads, int head_size, const detail::RowMap& row) {
  switch (v.type) {
    case KVType::f32:
      detail::attend_all(out, q, kl, detail::LoadF32{static_cast<const float*>(v.data), head_size},
                         pos, T, n_heads, n_kv_heads, head_size, row);
      return;
    case KVType::f16:
      detail::attend_all(out, q, kl, LoadF16{static_cast<const Eigen::half*>(v.data), head_size},
                         pos, T, n_heads, n_kv_heads, head_size, row);
      return;
    case KVType::int8:
      detail::attend_all(out, q, kl,
                         LoadI8{static_cast<const std::int8_t*>(v.data), v.scales, head_size}, pos,
                         T, n_heads, n_kv_heads, head_size, row);
      return;
  }
}

}  // namespace

void attention_kv_cpu(float* out, const float* q, const KVRowsView& k, const KVRowsView& v,
                      const int* pos, int T, int n_heads, int n_kv_heads, int head_size) {
  // Keys and values of one sequence share one block table (KVSequence gives both views).
  if (k.block_table != v.block_table || (k.block_table && k.block_size != v.block_size)) {
    attention_kv_ref(out, q, k, v, pos, T, n_heads, n_kv_heads, head_size);
    return;
  }
  const detail::RowMap row{k.block_table, k.block_size};
  switch (k.type) {
    case KVType::f32:
      dispatch_v(out, q, detail::LoadF32{static_cast<const float*>(k.data), head_size}, v, pos, T,
                 n_heads, n_kv_heads, head_size, row);
      return;
    case KVType::f16:
      dispatch_v(out, q, LoadF16{static_cast<const Eigen::half*>(k.data), head_size}, v, pos, T,
                 n_heads, n_kv_heads, head_size, row);
      return;
    case KVType::int8:
      dispatch_v(out, q, LoadI8{static_cast<const std::int8_t*>(k.data), k.scales, head_size}, v,
                 pos, T, n_heads, n_kv_heads, head_size, row);
      return;
  }
}

}  // namespace inferlab::kernels
