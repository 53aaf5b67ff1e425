#pragma once
// Private to the kernels library: the fast CPU attention loop, shared by attention_cpu (float
// cache) and attention_kv_cpu (f16/int8 cache). A "loader" reads element i of the cached row of
// (position, KV head) `rh` and its scale, so the same loop serves every storage type.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

namespace inferlab::kernels::detail {

struct LoadF32 {
  const float* d;
  int hs;
  float scale(std::size_t) const { return 1.0f; }
  float at(std::size_t rh, int i) const { return d[rh * hs + i]; }
};

// Where position s is stored: row s of a contiguous cache, or a row found through a block table
// (PagedAttention). Only the address changes, never the order of the arithmetic.
struct RowMap {
  const int* block_table = nullptr;
  int block_size = 0;
  std::size_t operator()(int s) const {
    if (block_table == nullptr) return std::size_t(s);
    return std::size_t(block_table[s / block_size]) * block_size + std::size_t(s % block_size);
  }
};

// One query head at position p: scores over positions 0..p, softmax, weighted sum of values.
// `scores` holds p + 1 floats.
template <class KLoad, class VLoad>
void attend_row(float* out, const float* q, const KLoad& kl, const VLoad& vl, int p, int kv_head,
                int n_kv_heads, int head_size, float* scores, const RowMap& row) {
  const float scale = 1.0f / std::sqrt(float(head_size));
  float max = -INFINITY;
  for (int s = 0; s <= p; ++s) {
    const std::size_t rh = row(s) * n_kv_heads + kv_head;
    // Eight independent partial sums: the compiler vectorises them without reassociating, and
    // the dot product stops being one long chain of dependent additions (which made long
    // contexts crawl). The order depends only on head_size, so batch invariance holds.
    float lanes[8] = {};
    const int body = head_size - head_size % 8;
    for (int i = 0; i < body; i += 8)
      for (int l = 0; l < 8; ++l) lanes[l] += q[i + l] * kl.at(rh, i + l);
    float dot = ((lanes[0] + lanes[4]) + (lanes[1] + lanes[5])) +
                ((lanes[2] + lanes[6]) + (lanes[3] + lanes[7]));
    for (int i = body; i < head_size; ++i) dot += q[i] * kl.at(rh, i);
    // A per-row scale factors out of the dot product: sum(q * s * k8) = s * sum(q * k8).
    scores[s] = dot * kl.scale(rh) * scale;
    max = std::max(max, scores[s]);
  }
  float sum = 0.0f;
  for (int s = 0; s <= p; ++s) {
    scores[s] = std::exp(scores[s] - max);  // subtracting the max keeps exp() from overflowing
    sum += scores[s];
  }
  const float inv = 1.0f / sum;
  for (int i = 0; i < head_size; ++i) out[i] = 0.0f;
  for (int s = 0; s <= p; ++s) {
    const std::size_t rh = row(s) * n_kv_heads + kv_head;
    const float a = scores[s] * inv * vl.scale(rh);
    for (int i = 0; i < head_size; ++i) out[i] += a * vl.at(rh, i);
  }
}

// All (token, head) pairs, in parallel when there is enough work to pay for waking threads.
template <class KLoad, class VLoad>
void attend_all(float* out, const float* q, const KLoad& kl, const VLoad& vl, const int* pos,
                int T, int n_heads, int n_kv_heads, int head_size, const RowMap& row = {}) {
  const int q_dim = n_heads * head_size, group = n_heads / n_kv_heads;
  int max_pos = 0;
  for (int t = 0; t < T; ++t) max_pos = std::max(max_pos, pos[t]);
#pragma omp parallel if (std::size_t(T) * n_heads * (max_pos + 1) * head_size >= (1u << 17))
  {
    std::vector<float> scores(std::size_t(max_pos) + 1);  // one scratch row per thread
#pragma omp for schedule(dynamic, 4) collapse(2)
    for (int t = 0; t < T; ++t)
      for (int h = 0; h < n_heads; ++h)
        attend_row(out + std::size_t(t) * q_dim + std::size_t(h) * head_size,
                   q + std::size_t(t) * q_dim + std::size_t(h) * head_size, kl, vl, pos[t],
                   h / group, n_kv_heads, head_size, scores.data(), row);
  }
}

}  // namespace inferlab::kernels::detail
