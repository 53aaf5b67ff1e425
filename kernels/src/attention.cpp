// Causal grouped-query attention over a KV cache, reference and fast CPU versions.
#include "inferlab/kernels/attention.hpp"

#include <cmath>
#include <cstddef>
#include <vector>

#include "attend.hpp"

namespace inferlab::kernels {

void attention_ref(float* out, const float* q, const float* k_cache, const float* v_cache,
                   const int* pos, int T, int n_heads, int n_kv_heads, int head_size) {
  const int q_dim = n_heads * head_size, kv_dim = n_kv_heads * head_size;
  const int group = n_heads / n_kv_heads;
  const float scale = 1.0f / std::sqrt(float(head_size));
  for (int t = 0; t < T; ++t) {
    const int p = pos[t];
    std::vector<float> scores(std::size_t(p) + 1);
    for (int h = 0; h < n_heads; ++h) {
      const float* qh = q + std::size_t(t) * q_dim + std::size_t(h) * head_size;
      const int kvh = h / group;  // the KV head this query head shares
      float max = -INFINITY;
      for (int s = 0; s <= p; ++s) {
        const float* k = k_cache + std::size_t(s) * kv_dim + std::size_t(kvh) * head_size;
        float dot = 0.0f;
        for (int i = 0; i < head_size; ++i) dot += qh[i] * k[i];
        scores[s] = dot * scale;
        max = scores[s] > max ? scores[s] : max;
      }
      float sum = 0.0f;
      for (int s = 0; s <= p; ++s) {
        scores[s] = std::exp(scores[s] - max);
        sum += scores[s];
      }
      float* oh = out + std::size_t(t) * q_dim + std::size_t(h) * head_size;
      for (int i = 0; i < head_size; ++i) oh[i] = 0.0f;
      for (int s = 0; s <= p; ++s) {
        const float* v = v_cache + std::size_t(s) * kv_dim + std::size_t(kvh) * head_size;
        for (int i = 0; i < head_size; ++i) oh[i] += scores[s] / sum * v[i];
      }
    }
  }
}

void attention_cpu(float* out, const float* q, const float* k_cache, const float* v_cache,
                   const int* pos, int T, int n_heads, int n_kv_heads, int head_size) {
  detail::attend_all(out, q, detail::LoadF32{k_cache, head_size},
                     detail::LoadF32{v_cache, head_size}, pos, T, n_heads, n_kv_heads, head_size);
}

}  // namespace inferlab::kernels
