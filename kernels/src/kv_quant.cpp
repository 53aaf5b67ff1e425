// KV cache storage types: storing, loading, and attention over the stored rows.
#include "inferlab/kernels/kv_quant.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include <Eigen/Core>  // Eigen::half: IEEE binary16 with round-to-nearest-even conversions

#include "inferlab/kernels/attention.hpp"
#include "inferlab/kernels/error.hpp"
#include "attend.hpp"

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
    case DType::f32:
      detail::attend_all(out, q, kl, detail::LoadF32{static_cast<const float*>(v.data), head_size},
                         pos, T, n_heads, n_kv_heads, head_size, row);
      return;
    case DType::f16:
      detail::attend_all(out, q, kl, LoadF16{static_cast<const Eigen::half*>(v.data), head_size},
                         pos, T, n_heads, n_kv_heads, head_size, row);
      return;
    case DType::int8:
      detail::attend_all(out, q, kl,
                         LoadI8{static_cast<const std::int8_t*>(v.data), v.scales, head_size}, pos,
                         T, n_heads, n_kv_heads, head_size, row);
      return;
    default:
      require_kv_storage(v.type, "attention_kv_cpu");  // bf16, fp8, int4: throws
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
    case DType::f32:
      dispatch_v(out, q, detail::LoadF32{static_cast<const float*>(k.data), head_size}, v, pos, T,
                 n_heads, n_kv_heads, head_size, row);
      return;
    case DType::f16:
      dispatch_v(out, q, LoadF16{static_cast<const Eigen::half*>(k.data), head_size}, v, pos, T,
                 n_heads, n_kv_heads, head_size, row);
      return;
    case DType::int8:
      dispatch_v(out, q, LoadI8{static_cast<const std::int8_t*>(k.data), k.scales, head_size}, v,
                 pos, T, n_heads, n_kv_heads, head_size, row);
      return;
    default:
      require_kv_storage(k.type, "attention_kv_cpu");  // bf16, fp8, int4: throws
  }
}

namespace {

// Calls f(key_loader, value_loader) with the loaders that match the two views' storage types.
template <class F>
void with_loader(const KVRowsView& view, int head_size, F&& f) {
  switch (view.type) {
    case DType::f32:
      f(detail::LoadF32{static_cast<const float*>(view.data), head_size});
      return;
    case DType::f16:
      f(LoadF16{static_cast<const Eigen::half*>(view.data), head_size});
      return;
    case DType::int8:
      f(LoadI8{static_cast<const std::int8_t*>(view.data), view.scales, head_size});
      return;
    default:
      require_kv_storage(view.type, "attention_kv_rows_cpu");  // bf16, fp8, int4: throws
  }
}

}  // namespace

void attention_kv_rows_ref(float* out, const float* q, const KVRowsView& k, const KVRowsView& v,
                           const int* begin, const int* rows, int T, int n_heads, int n_kv_heads,
                           int head_size) {
  int n_rows = 0;
  for (int i = begin[0]; i < begin[T]; ++i) n_rows = std::max(n_rows, rows[i] + 1);
  const int q_dim = n_heads * head_size, kv_dim = n_kv_heads * head_size;
  const std::size_t n = std::size_t(n_rows) * kv_dim;
  std::vector<float> kf(n), vf(n);
  // Positions 0..n_rows-1, each read wherever the view stores it (KVRowsView::row()).
  const std::size_t kel = kv_element_bytes(k.type), vel = kv_element_bytes(v.type);
  for (int p = 0; p < n_rows; ++p) {
    const std::size_t rk = k.row(p), rv = v.row(p);
    kv_load_rows(k.type, &kf[std::size_t(p) * kv_dim],
                 static_cast<const char*>(k.data) + rk * std::size_t(kv_dim) * kel,
                 k.scales ? k.scales + rk * n_kv_heads : nullptr, 1, n_kv_heads, head_size);
    kv_load_rows(v.type, &vf[std::size_t(p) * kv_dim],
                 static_cast<const char*>(v.data) + rv * std::size_t(kv_dim) * vel,
                 v.scales ? v.scales + rv * n_kv_heads : nullptr, 1, n_kv_heads, head_size);
  }
  const int group = n_heads / n_kv_heads;
  const float scale = 1.0f / std::sqrt(float(head_size));
  for (int t = 0; t < T; ++t) {
    const int* list = rows + begin[t];
    const int m = begin[t + 1] - begin[t];
    std::vector<float> scores(static_cast<std::size_t>(m));
    for (int h = 0; h < n_heads; ++h) {
      const float* qh = q + std::size_t(t) * q_dim + std::size_t(h) * head_size;
      const int kvh = h / group;
      float max = -INFINITY;
      for (int s = 0; s < m; ++s) {
        const float* kr = &kf[std::size_t(list[s]) * kv_dim + std::size_t(kvh) * head_size];
        float dot = 0.0f;
        for (int i = 0; i < head_size; ++i) dot += qh[i] * kr[i];
        scores[s] = dot * scale;
        max = std::max(max, scores[s]);
      }
      float sum = 0.0f;
      for (int s = 0; s < m; ++s) {
        scores[s] = std::exp(scores[s] - max);
        sum += scores[s];
      }
      float* oh = out + std::size_t(t) * q_dim + std::size_t(h) * head_size;
      for (int i = 0; i < head_size; ++i) oh[i] = 0.0f;
      for (int s = 0; s < m; ++s) {
        const float* vr = &vf[std::size_t(list[s]) * kv_dim + std::size_t(kvh) * head_size];
        for (int i = 0; i < head_size; ++i) oh[i] += scores[s] / sum * vr[i];
      }
    }
  }
}

void attention_kv_rows_cpu(float* out, const float* q, const KVRowsView& k, const KVRowsView& v,
                           const int* begin, const int* rows, int T, int n_heads, int n_kv_heads,
                           int head_size) {
  // Nine storage combinations, one loop: the loaders are chosen here, the loop is shared.
  with_loader(k, head_size, [&](const auto& kl) {
    with_loader(v, head_size, [&](const auto& vl) {
      detail::attend_all_listed(out, q, kl, vl, begin, rows, T, n_heads, n_kv_heads, head_size,
                                detail::RowMap{k.block_table, k.block_size});
    });
  });
}

}  // namespace inferlab::kernels
