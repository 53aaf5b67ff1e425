// Causal grouped-query attention over a KV cache, reference and fast CPU versions.
#include "inferlab/kernels/attention.hpp"

#include <cmath>
#include <cstddef>
#include <vector>

namespace inferlab::kernels {

namespace {

// Attention of one query head at position p: scores over keys 0..p, softmax, weighted values.
// `scores` must hold p + 1 floats.
inline void attend_one(float* out, const float* q, const float* k_cache, const float* v_cache,
                       int p, int kv_head, int kv_dim, int head_size, float* scores) {
  const float scale = 1.0f / std::sqrt(float(head_size));
  float max = -INFINITY;
  for (int s = 0; s <= p; ++s) {
    const float* k = k_cache + std::size_t(s) * kv_dim + std::size_t(kv_head) * head_size;
    float dot = 0.0f;
    for (int i = 0; i < head_size; ++i) dot += q[i] * k[i];
    scores[s] = dot * scale;
    max = scores[s] > max ? scores[s] : max;
  }
  float sum = 0.0f;
  for (int s = 0; s <= p; ++s) {
    scores[s] = std::exp(scores[s] - max);
    sum += scores[s];
  }
  const float inv = 1.0f / sum;
  for (int i = 0; i < head_size; ++i) out[i] = 0.0f;
  for (int s = 0; s <= p; ++s) {
    const float* v = v_cache + std::size_t(s) * kv_dim + std::size_t(kv_head) * head_size;
    const float a = scores[s] * inv;
    for (int i = 0; i < head_size; ++i) out[i] += a * v[i];
  }
}

}  // namespace

void attention_ref(float* out, const float* q, const float* k_cache, const float* v_cache,
                   const int* pos, int T, int n_heads, int n_kv_heads, int head_size) {
  const int q_dim = n_heads * head_size, kv_dim = n_kv_heads * head_size;
  const int group = n_heads / n_kv_heads;
  int max_pos = 0;
  for (int t = 0; t < T; ++t) max_pos = pos[t] > max_pos ? pos[t] : max_pos;
  std::vector<float> scores(std::size_t(max_pos) + 1);
  for (int t = 0; t < T; ++t) {
    for (int h = 0; h < n_heads; ++h) {
      attend_one(out + std::size_t(t) * q_dim + std::size_t(h) * head_size,
                 q + std::size_t(t) * q_dim + std::size_t(h) * head_size, k_cache, v_cache, pos[t],
                 h / group, kv_dim, head_size, scores.data());
    }
  }
}

void attention_cpu(float* out, const float* q, const float* k_cache, const float* v_cache,
                   const int* pos, int T, int n_heads, int n_kv_heads, int head_size) {
  const int q_dim = n_heads * head_size, kv_dim = n_kv_heads * head_size;
  const int group = n_heads / n_kv_heads;
  int max_pos = 0;
  for (int t = 0; t < T; ++t) max_pos = pos[t] > max_pos ? pos[t] : max_pos;
  // (token, head) pairs are independent: one scratch row of scores per thread.
#pragma omp parallel if (std::size_t(T) * n_heads * (max_pos + 1) * head_size >= (1u << 17))
  {
    std::vector<float> scores(std::size_t(max_pos) + 1);
#pragma omp for schedule(dynamic, 4) collapse(2)
    for (int t = 0; t < T; ++t) {
      for (int h = 0; h < n_heads; ++h) {
        attend_one(out + std::size_t(t) * q_dim + std::size_t(h) * head_size,
                   q + std::size_t(t) * q_dim + std::size_t(h) * head_size, k_cache, v_cache,
                   pos[t], h / group, kv_dim, head_size, scores.data());
      }
    }
  }
}

}  // namespace inferlab::kernels
