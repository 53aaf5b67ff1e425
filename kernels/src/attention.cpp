// Causal grouped-query attention over a KV cache: the references (plain loops over float rows)
// and the fast CPU versions (one loop for every storage type and row order, attend.hpp).
#include "inferlab/kernels/attention.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "attend.hpp"

namespace inferlab::kernels {

namespace {

// The references' loops: query token t attends to the rows rows_of(t) of the float rows
// k_rows, v_rows (row r at r * Nkv*hs), in the order listed: detail::CausalRows (0..p) or
// detail::ListedRows.
template <class RowsOf>
void attend_ref(float* out, const float* q, const float* k_rows, const float* v_rows,
                const RowsOf& rows_of, int T, int n_heads, int n_kv_heads, int head_size) {
  const int q_dim = n_heads * head_size, kv_dim = n_kv_heads * head_size;
  const int group = n_heads / n_kv_heads;
  const float scale = 1.0f / std::sqrt(float(head_size));
  for (int t = 0; t < T; ++t) {
    const auto rows = rows_of(t);
    const int n = rows.size();
    std::vector<float> scores(static_cast<std::size_t>(n));
    for (int h = 0; h < n_heads; ++h) {
      const float* qh = q + std::size_t(t) * q_dim + std::size_t(h) * head_size;
      const int kvh = h / group;  // the KV head this query head shares
      float max = -INFINITY;
      for (int s = 0; s < n; ++s) {
        const float* k = k_rows + std::size_t(rows[s]) * kv_dim + std::size_t(kvh) * head_size;
        float dot = 0.0f;
        for (int i = 0; i < head_size; ++i) dot += qh[i] * k[i];
        scores[s] = dot * scale;
        max = std::max(max, scores[s]);
      }
      float sum = 0.0f;
      for (int s = 0; s < n; ++s) {
        scores[s] = std::exp(scores[s] - max);
        sum += scores[s];
      }
      float* oh = out + std::size_t(t) * q_dim + std::size_t(h) * head_size;
      for (int i = 0; i < head_size; ++i) oh[i] = 0.0f;
      for (int s = 0; s < n; ++s) {
        const float* v = v_rows + std::size_t(rows[s]) * kv_dim + std::size_t(kvh) * head_size;
        for (int i = 0; i < head_size; ++i) oh[i] += scores[s] / sum * v[i];
      }
    }
  }
}

// Positions 0..n-1 of a view as float rows (n, Nkv*hs), each read wherever the view stores it:
// the references know nothing of blocks beyond KVRowsView::row().
std::vector<float> load_positions(const KVRowsView& view, int n, int n_kv_heads, int head_size) {
  const std::size_t kv_dim = std::size_t(n_kv_heads) * head_size;
  const std::size_t elem = kv_element_bytes(view.type);
  std::vector<float> rows(std::size_t(n) * kv_dim);
  for (int p = 0; p < n; ++p) {
    const std::size_t r = view.row(p);
    kv_load_rows(view.type, &rows[std::size_t(p) * kv_dim],
                 static_cast<const char*>(view.data) + r * kv_dim * elem,
                 view.scales ? view.scales + r * n_kv_heads : nullptr, 1, n_kv_heads, head_size);
  }
  return rows;
}

// Calls f(loader) with the loader (attend.hpp) that reads the view's storage type; `op` names
// the caller in the error for a type the KV storage does not implement.
template <class F>
void with_loader(const KVRowsView& view, int head_size, const char* op, F&& f) {
  switch (view.type) {
    case DType::f32:
      f(detail::LoadF32{static_cast<const float*>(view.data), head_size});
      return;
    case DType::f16:
      f(detail::LoadF16{static_cast<const Eigen::half*>(view.data), head_size});
      return;
    case DType::int8:
      f(detail::LoadI8{static_cast<const std::int8_t*>(view.data), view.scales, head_size});
      return;
    default:
      require_kv_storage(view.type, op);  // bf16, fp8, int4: throws
  }
}

}  // namespace

void attention_ref(float* out, const float* q, const float* k_cache, const float* v_cache,
                   const int* pos, int T, int n_heads, int n_kv_heads, int head_size) {
  const auto causal = [pos](int t) { return detail::CausalRows{pos[t] + 1}; };
  attend_ref(out, q, k_cache, v_cache, causal, T, n_heads, n_kv_heads, head_size);
}

void attention_cpu(float* out, const float* q, const float* k_cache, const float* v_cache,
                   const int* pos, int T, int n_heads, int n_kv_heads, int head_size) {
  detail::attend_all(out, q, detail::LoadF32{k_cache, head_size},
                     detail::LoadF32{v_cache, head_size}, pos, T, n_heads, n_kv_heads, head_size);
}

void attention_kv_ref(float* out, const float* q, const KVRowsView& k, const KVRowsView& v,
                      const int* pos, int T, int n_heads, int n_kv_heads, int head_size) {
  int n = 0;
  for (int t = 0; t < T; ++t) n = std::max(n, pos[t] + 1);
  const std::vector<float> kf = load_positions(k, n, n_kv_heads, head_size);
  const std::vector<float> vf = load_positions(v, n, n_kv_heads, head_size);
  attention_ref(out, q, kf.data(), vf.data(), pos, T, n_heads, n_kv_heads, head_size);
}

void attention_kv_cpu(float* out, const float* q, const KVRowsView& k, const KVRowsView& v,
                      const int* pos, int T, int n_heads, int n_kv_heads, int head_size) {
  // Keys and values of one sequence share one block table (KVSequence gives both views).
  if (k.block_table != v.block_table || (k.block_table && k.block_size != v.block_size)) {
    attention_kv_ref(out, q, k, v, pos, T, n_heads, n_kv_heads, head_size);
    return;
  }
  // Nine storage combinations, one loop: the loaders are chosen here, the loop is shared.
  with_loader(k, head_size, "attention_kv_cpu", [&](const auto& kl) {
    with_loader(v, head_size, "attention_kv_cpu", [&](const auto& vl) {
      detail::attend_all(out, q, kl, vl, pos, T, n_heads, n_kv_heads, head_size,
                         detail::RowMap{k.block_table, k.block_size});
    });
  });
}

void attention_kv_rows_ref(float* out, const float* q, const KVRowsView& k, const KVRowsView& v,
                           const int* begin, const int* rows, int T, int n_heads, int n_kv_heads,
                           int head_size) {
  int n = 0;
  for (int i = begin[0]; i < begin[T]; ++i) n = std::max(n, rows[i] + 1);
  const std::vector<float> kf = load_positions(k, n, n_kv_heads, head_size);
  const std::vector<float> vf = load_positions(v, n, n_kv_heads, head_size);
  const auto listed = [begin, rows](int t) {
    return detail::ListedRows{rows + begin[t], begin[t + 1] - begin[t]};
  };
  attend_ref(out, q, kf.data(), vf.data(), listed, T, n_heads, n_kv_heads, head_size);
}

void attention_kv_rows_cpu(float* out, const float* q, const KVRowsView& k, const KVRowsView& v,
                           const int* begin, const int* rows, int T, int n_heads, int n_kv_heads,
                           int head_size) {
  with_loader(k, head_size, "attention_kv_rows_cpu", [&](const auto& kl) {
    with_loader(v, head_size, "attention_kv_rows_cpu", [&](const auto& vl) {
      detail::attend_all_listed(out, q, kl, vl, begin, rows, T, n_heads, n_kv_heads, head_size,
                                detail::RowMap{k.block_table, k.block_size});
    });
  });
}

void paged_attention_ref(float* out, const float* q, const float* key_pool, const float* value_pool,
                         const int* block_tables, const int* table_offsets, const int* token_seq,
                         const int* pos, int T, int n_heads, int n_kv_heads, int head_size,
                         int block_size) {
  const std::size_t KV = std::size_t(n_kv_heads) * head_size, QD = std::size_t(n_heads) * head_size;
  std::vector<float> k, v;
  for (int t = 0; t < T; ++t) {
    const int* table = block_tables + table_offsets[token_seq[t]];
    const int p = pos[t];
    k.resize(std::size_t(p + 1) * KV);
    v.resize(k.size());
    for (int s = 0; s <= p; ++s) {
      const std::size_t row = std::size_t(table[s / block_size]) * block_size + s % block_size;
      std::copy_n(key_pool + row * KV, KV, k.begin() + std::ptrdiff_t(s * KV));
      std::copy_n(value_pool + row * KV, KV, v.begin() + std::ptrdiff_t(s * KV));
    }
    attention_ref(out + t * QD, q + t * QD, k.data(), v.data(), &pos[t], 1, n_heads, n_kv_heads,
                  head_size);
  }
}

}  // namespace inferlab::kernels
