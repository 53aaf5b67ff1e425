// Exercise 12, one checked answer: the append and the attention read of one layer's KV cache.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <string>

#include "exercise.hpp"
#include "inferlab/base/error.hpp"

namespace inferlab::ex12 {

LayerCache make_layer_cache(int capacity, int n_kv_heads, int head_size) {
  if (capacity < 1 || n_kv_heads < 1 || head_size < 1) {
    throw Error("make_layer_cache: capacity " + std::to_string(capacity) + ", n_kv_heads " +
                std::to_string(n_kv_heads) + ", head_size " + std::to_string(head_size) +
                " (each must be >= 1)");
  }
  LayerCache cache;
  cache.n_kv_heads = n_kv_heads;
  cache.head_size = head_size;
  cache.capacity = capacity;
  // Allocated once for the whole capacity: a decode step must never reallocate (and move) the
  // cache it is reading.
  const std::size_t floats = std::size_t(capacity) * std::size_t(n_kv_heads) * head_size;
  cache.keys.assign(floats, 0.0f);
  cache.values.assign(floats, 0.0f);
  return cache;
}

void append(LayerCache& cache, std::span<const float> k, std::span<const float> v) {
  const std::size_t row = std::size_t(cache.n_kv_heads) * cache.head_size;
  if (cache.length >= cache.capacity) {
    throw Error("append: the cache is full (capacity " + std::to_string(cache.capacity) +
                " positions)");
  }
  if (k.size() != row || v.size() != row) {
    throw Error("append: k has " + std::to_string(k.size()) + " floats and v " +
                std::to_string(v.size()) + ", expected Nkv * hs = " + std::to_string(row));
  }
  // Checked before anything is written, so a refused append leaves the cache as it was.
  const std::size_t at = std::size_t(cache.length) * row;
  std::copy(k.begin(), k.end(), cache.keys.begin() + std::ptrdiff_t(at));
  std::copy(v.begin(), v.end(), cache.values.begin() + std::ptrdiff_t(at));
  ++cache.length;
}

std::vector<float> attend(const LayerCache& cache, std::span<const float> q, int n_heads) {
  const int hs = cache.head_size, n_kv = cache.n_kv_heads, n = cache.length;
  if (n < 1) throw Error("attend: the cache is empty (append the query's own key first)");
  if (n_kv < 1 || n_heads < 1 || n_heads % n_kv != 0) {
    throw Error("attend: n_heads " + std::to_string(n_heads) + " is not a positive multiple of " +
                "n_kv_heads " + std::to_string(n_kv));
  }
  if (q.size() != std::size_t(n_heads) * hs) {
    throw Error("attend: q has " + std::to_string(q.size()) +
                " floats, expected Nh * hs = " + std::to_string(n_heads * hs));
  }
  const int group = n_heads / n_kv;
  const std::size_t row = std::size_t(n_kv) * hs;
  const float scale = 1.0f / std::sqrt(float(hs));
  std::vector<float> out(q.size(), 0.0f);
  std::vector<float> w(std::size_t(n), 0.0f);
  for (int h = 0; h < n_heads; ++h) {
    const float* qh = q.data() + std::size_t(h) * hs;
    const std::size_t head_at = std::size_t(h / group) * hs;  // the KV head of h's group
    float max = -INFINITY;
    for (int p = 0; p < n; ++p) {
      const float* k = cache.keys.data() + std::size_t(p) * row + head_at;
      float dot = 0.0f;
      for (int i = 0; i < hs; ++i) dot += qh[i] * k[i];
      w[std::size_t(p)] = dot * scale;
      max = std::max(max, w[std::size_t(p)]);
    }
    // exp(s - max) <= 1: the same softmax, without overflow for large scores.
    float sum = 0.0f;
    for (int p = 0; p < n; ++p) sum += (w[std::size_t(p)] = std::exp(w[std::size_t(p)] - max));
    float* oh = out.data() + std::size_t(h) * hs;
    for (int p = 0; p < n; ++p) {
      const float* v = cache.values.data() + std::size_t(p) * row + head_at;
      const float weight = w[std::size_t(p)] / sum;
      for (int i = 0; i < hs; ++i) oh[i] += weight * v[i];
    }
  }
  return out;
}

}  // namespace inferlab::ex12
