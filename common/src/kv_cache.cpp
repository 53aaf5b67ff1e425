// The contiguous per-sequence KV cache.
#include "inferlab/kv_cache.hpp"

#include <fmt/format.h>

#include "inferlab/error.hpp"
#include "inferlab/input_checks.hpp"

namespace inferlab {

KVType parse_kv_type(const std::string& name) {
  if (name == "f32" || name == "fp32") return KVType::f32;
  if (name == "f16" || name == "fp16") return KVType::f16;
  if (name == "int8") return KVType::int8;
  throw Error(fmt::format("unknown KV cache type '{}' (choose f32, f16 or int8)", name));
}

const char* kv_type_name(KVType type) {
  switch (type) {
    case KVType::f32: return "f32";
    case KVType::f16: return "f16";
    case KVType::int8: return "int8";
  }
  return "?";
}

KVCache::KVCache(const ModelConfig& config, int capacity, KVType type)
    : n_layers_(config.n_layers),
      n_kv_heads_(config.n_kv_heads),
      head_size_(config.head_size()),
      capacity_(capacity == 0 ? config.seq_len : capacity),
      kv_dim_(config.kv_dim()),
      type_(type) {
  if (capacity_ <= 0 || capacity_ > config.seq_len) {
    throw Error(fmt::format("KV cache capacity {} outside [1, seq_len = {}]", capacity_,
                            config.seq_len));
  }
  const std::size_t elements = std::size_t(n_layers_) * capacity_ * kv_dim_;
  const std::size_t bytes = elements * kernels::kv_element_bytes(type_);
  // Say what is too big before trying, instead of a bare std::bad_alloc.
  require_allocation(2.0 * double(bytes),
                     fmt::format("the {} KV cache for a context of {} tokens", kv_type_name(type_),
                                 capacity_));
  keys_.assign(bytes, 0);
  values_.assign(bytes, 0);
  if (type_ == KVType::int8) {
    key_scales_.assign(std::size_t(n_layers_) * capacity_ * n_kv_heads_, 0.0f);
    value_scales_.assign(key_scales_.size(), 0.0f);
  }
}

void KVCache::store(int layer, int pos, int rows, const float* k, const float* v) {
  if (layer < 0 || layer >= n_layers_ || pos < 0 || rows < 0 || pos + rows > capacity_) {
    throw Error(fmt::format("KV cache store: layer {} positions {}..{} outside {} layers x {}",
                            layer, pos, pos + rows - 1, n_layers_, capacity_));
  }
  const std::size_t elem = kernels::kv_element_bytes(type_);
  const std::size_t off = row_offset(layer, pos);
  const std::size_t scale_off = (std::size_t(layer) * capacity_ + pos) * n_kv_heads_;
  const bool q8 = type_ == KVType::int8;
  kernels::kv_store_rows(type_, keys_.data() + off * elem, q8 ? &key_scales_[scale_off] : nullptr,
                         k, rows, n_kv_heads_, head_size_);
  kernels::kv_store_rows(type_, values_.data() + off * elem,
                         q8 ? &value_scales_[scale_off] : nullptr, v, rows, n_kv_heads_,
                         head_size_);
}

kernels::KVRowsView KVCache::keys(int layer) const {
  const std::size_t elem = kernels::kv_element_bytes(type_);
  return {type_, keys_.data() + row_offset(layer, 0) * elem,
          type_ == KVType::int8 ? &key_scales_[std::size_t(layer) * capacity_ * n_kv_heads_] : nullptr};
}

kernels::KVRowsView KVCache::values(int layer) const {
  const std::size_t elem = kernels::kv_element_bytes(type_);
  return {type_, values_.data() + row_offset(layer, 0) * elem,
          type_ == KVType::int8 ? &value_scales_[std::size_t(layer) * capacity_ * n_kv_heads_]
                                : nullptr};
}

std::size_t KVCache::bytes_per_token() const {
  std::size_t b = 2 * std::size_t(n_layers_) * kv_dim_ * kernels::kv_element_bytes(type_);
  if (type_ == KVType::int8) b += 2 * std::size_t(n_layers_) * n_kv_heads_ * sizeof(float);
  return b;
}

void KVCache::set_length(int length) {
  if (length < 0 || length > capacity_) {
    throw Error(fmt::format("KV cache length {} outside [0, {}]", length, capacity_));
  }
  length_ = length;
}

}  // namespace inferlab
