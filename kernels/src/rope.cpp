// Rotary position embedding (llama2.c convention), reference and fast CPU versions.
#include "inferlab/kernels/rope.hpp"

#include <cmath>
#include <cstddef>

namespace inferlab::kernels {

void rope_ref(float* q, float* k, const int* pos, int T, int n_heads, int n_kv_heads, int head_size,
              float theta) {
  const int q_dim = n_heads * head_size, k_dim = n_kv_heads * head_size;
  for (int t = 0; t < T; ++t) {
    for (int i = 0; i < q_dim; i += 2) {
      const int j = i % head_size;  // position of the pair inside its head
      const float freq = 1.0f / std::pow(theta, float(j) / float(head_size));
      const float angle = float(pos[t]) * freq;
      const float c = std::cos(angle), s = std::sin(angle);
      // The same rotation applies to the query and (for the first k_dim entries) to the key.
      for (int which = 0; which < (i < k_dim ? 2 : 1); ++which) {
        float* v = (which == 0 ? q + std::size_t(t) * q_dim : k + std::size_t(t) * k_dim) + i;
        const float a = v[0], b = v[1];
        v[0] = a * c - b * s;
        v[1] = a * s + b * c;
      }
    }
  }
}

namespace {

// The fast version's loops, the inverse frequency of pair j given by inv_freq(j).
template <class InvFreq>
void rope_rows(float* q, float* k, const int* pos, int T, int n_heads, int n_kv_heads,
               int head_size, InvFreq inv_freq) {
  const int half = head_size / 2;
  // No scratch buffers (this runs in every layer of every decode step): each pair index j gets
  // its cos/sin once per token and rotates that pair in every query and key head.
  auto token = [&](int t) {
    float* qt = q + std::size_t(t) * n_heads * head_size;
    float* kt = k + std::size_t(t) * n_kv_heads * head_size;
    for (int j = 0; j < half; ++j) {
      const float angle = float(pos[t]) * inv_freq(j);
      const float c = std::cos(angle), s = std::sin(angle);
      auto rotate = [&](float* v, int heads) {
        for (int h = 0; h < heads; ++h) {
          float* pair = v + std::size_t(h) * head_size + 2 * j;
          const float a = pair[0], b = pair[1];
          pair[0] = a * c - b * s;
          pair[1] = a * s + b * c;
        }
      };
      rotate(qt, n_heads);
      rotate(kt, n_kv_heads);
    }
  };
  // Small work stays out of the OpenMP runtime altogether (see rmsnorm_cpu).
  if (long(T) * (n_heads + n_kv_heads) * head_size < (1L << 16)) {
    for (int t = 0; t < T; ++t) token(t);
    return;
  }
#pragma omp parallel for schedule(static)
  for (int t = 0; t < T; ++t) token(t);
}

}  // namespace

void rope_cpu(float* q, float* k, const int* pos, int T, int n_heads, int n_kv_heads, int head_size,
              float theta) {
  rope_rows(q, k, pos, T, n_heads, n_kv_heads, head_size, [theta, head_size](int j) {
    return 1.0f / std::pow(theta, float(2 * j) / float(head_size));
  });
}

void rope_cpu(float* q, float* k, const int* pos, int T, int n_heads, int n_kv_heads, int head_size,
              const float* inv_freq) {
  rope_rows(q, k, pos, T, n_heads, n_kv_heads, head_size,
            [inv_freq](int j) { return inv_freq[j]; });
}

}  // namespace inferlab::kernels
