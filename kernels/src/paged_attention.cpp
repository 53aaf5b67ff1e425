// Paged attention over a ragged batch: the reference (gather each sequence's rows through its
// block table, then the plain attention of attention_ref).
#include "inferlab/kernels/paged_attention.hpp"

#include <algorithm>
#include <cstddef>
#include <vector>

#include "inferlab/kernels/attention.hpp"

namespace inferlab::kernels {

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
