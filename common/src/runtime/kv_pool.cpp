// KV pools (host storage) and the sequences that address them through block tables.
#include "inferlab/runtime/kv_pool.hpp"

#include <algorithm>
#include <cstring>
#include <limits>
#include <new>

#include <fmt/format.h>

#include "inferlab/base/error.hpp"
#include "inferlab/base/input_checks.hpp"
#include "inferlab/runtime/kv_cache.hpp"
#include "inferlab/runtime/kv_sequence.hpp"

namespace inferlab {

std::size_t kv_storage_bytes_per_token(const ModelConfig& config, DType type) {
  std::size_t b =
      2 * std::size_t(config.n_layers) * config.kv_dim() * kernels::kv_element_bytes(type);
  if (type == DType::int8)
    b += 2 * std::size_t(config.n_layers) * config.n_kv_heads * sizeof(float);
  return b;
}

KVPool::KVPool(const ModelConfig& config, int num_blocks, int block_size, DType type)
    : config_(config), num_blocks_(num_blocks), block_size_(block_size), type_(type) {
  require_kv_storage(type, "KV pool");
  if (num_blocks < 1 || block_size < 1) {
    throw Error(fmt::format("KV pool: {} blocks of {} positions (both must be >= 1)", num_blocks,
                            block_size));
  }
  // Rows are addressed with int block ids * block_size: keep the product in range.
  if (std::size_t(num_blocks) * std::size_t(block_size) >
      std::size_t(std::numeric_limits<int>::max())) {
    throw Error(fmt::format("KV pool: {} blocks x {} positions is more than {} positions",
                            num_blocks, block_size, std::numeric_limits<int>::max()));
  }
}

void KVPool::check_block(int id, const char* what) const {
  if (id < 0 || id >= num_blocks_)
    throw Error(fmt::format("{}: block {} outside the pool's {} blocks", what, id, num_blocks_));
}

HostKVPool::HostKVPool(const ModelConfig& config, int num_blocks, int block_size, DType type)
    : KVPool(config, num_blocks, block_size, type) {
  const std::size_t elem = kernels::kv_element_bytes(type);
  const std::size_t per_side = std::size_t(config.n_layers) * elements_per_layer() * elem;
  // Say what is too big before trying: a vector of zeros that does not fit is not always a
  // std::bad_alloc (the kernel may overcommit, then kill the process as the zeros are written).
  require_allocation(2.0 * double(config.n_layers) * double(elements_per_layer()) * double(elem),
                     num_blocks == 1 ? fmt::format("the {} KV cache for a context of {} tokens",
                                                   dtype_name(type), block_size)
                                     : fmt::format("the {} KV pool of {} blocks of {} positions",
                                                   dtype_name(type), num_blocks, block_size));
  try {
    keys_.assign(per_side, 0);
    values_.assign(per_side, 0);
    if (type == DType::int8) {
      key_scales_.assign(std::size_t(config.n_layers) * scales_per_layer(), 0.0f);
      value_scales_.assign(key_scales_.size(), 0.0f);
    }
  } catch (const std::bad_alloc&) {
    throw Error(
        fmt::format("KV pool: cannot allocate {:.1f} MiB ({} blocks of {} positions, "
                    "{} bytes per position)",
                    double(bytes()) / (1 << 20), num_blocks, block_size, bytes_per_token()));
  }
}

void HostKVPool::store_rows(int layer, std::size_t row, int n, const float* k, const float* v) {
  const ModelConfig& c = config();
  const std::size_t elem = kernels::kv_element_bytes(type());
  const std::size_t e = std::size_t(layer) * elements_per_layer() + row * c.kv_dim();
  const std::size_t s = std::size_t(layer) * scales_per_layer() + row * c.n_kv_heads;
  const bool q8 = type() == DType::int8;
  kernels::kv_store_rows(type(), keys_.data() + e * elem, q8 ? &key_scales_[s] : nullptr, k, n,
                         c.n_kv_heads, c.head_size());
  kernels::kv_store_rows(type(), values_.data() + e * elem, q8 ? &value_scales_[s] : nullptr, v, n,
                         c.n_kv_heads, c.head_size());
}

kernels::KVRowsView HostKVPool::keys(int layer) const {
  const std::size_t elem = kernels::kv_element_bytes(type());
  kernels::KVRowsView view;
  view.type = type();
  view.data = keys_.data() + std::size_t(layer) * elements_per_layer() * elem;
  if (type() == DType::int8) view.scales = &key_scales_[std::size_t(layer) * scales_per_layer()];
  return view;
}

kernels::KVRowsView HostKVPool::values(int layer) const {
  const std::size_t elem = kernels::kv_element_bytes(type());
  kernels::KVRowsView view;
  view.type = type();
  view.data = values_.data() + std::size_t(layer) * elements_per_layer() * elem;
  if (type() == DType::int8) view.scales = &value_scales_[std::size_t(layer) * scales_per_layer()];
  return view;
}

// A block is block_size consecutive rows in every layer, for keys, values and (int8) scales.
// The three operations below walk the same pieces in the same order; `visit(ptr, bytes)`
// receives each piece of block `id`.
namespace {
template <class Bytes, class Scales, class Visit>
void for_each_piece(Bytes& keys, Bytes& values, Scales& kscales, Scales& vscales,
                    const KVPool& pool, int id, Visit&& visit) {
  const ModelConfig& c = pool.config();
  const std::size_t elem = kernels::kv_element_bytes(pool.type());
  const std::size_t row0 = std::size_t(id) * pool.block_size();
  const std::size_t rows = pool.rows();
  const std::size_t data_bytes = std::size_t(pool.block_size()) * c.kv_dim() * elem;
  const std::size_t scale_count = std::size_t(pool.block_size()) * c.n_kv_heads;
  for (int l = 0; l < c.n_layers; ++l) {
    const std::size_t e = (std::size_t(l) * rows + row0) * c.kv_dim() * elem;
    visit(&keys[e], data_bytes);
    visit(&values[e], data_bytes);
    if (pool.type() == DType::int8) {
      const std::size_t s = (std::size_t(l) * rows + row0) * c.n_kv_heads;
      visit(&kscales[s], scale_count * sizeof(float));
      visit(&vscales[s], scale_count * sizeof(float));
    }
  }
}
}  // namespace

void HostKVPool::copy_block(int src, int dst) {
  check_block(src, "copy_block");
  check_block(dst, "copy_block");
  if (src == dst) return;
  std::vector<std::uint8_t> tmp(bytes_per_block());
  read_block(src, tmp);
  write_block(dst, tmp);
}

void HostKVPool::copy_row(std::size_t src, std::size_t dst) {
  if (src >= rows() || dst >= rows())
    throw Error(fmt::format("copy_row: row {} -> {} outside the pool's {} rows", src, dst, rows()));
  if (src == dst) return;
  const ModelConfig& c = config();
  const std::size_t elem = kernels::kv_element_bytes(type());
  const std::size_t row_bytes = std::size_t(c.kv_dim()) * elem;
  for (int l = 0; l < c.n_layers; ++l) {
    const std::size_t base = std::size_t(l) * elements_per_layer() * elem;
    std::memcpy(&keys_[base + dst * row_bytes], &keys_[base + src * row_bytes], row_bytes);
    std::memcpy(&values_[base + dst * row_bytes], &values_[base + src * row_bytes], row_bytes);
    if (type() == DType::int8) {
      const std::size_t sb = std::size_t(l) * scales_per_layer();
      std::copy_n(&key_scales_[sb + src * c.n_kv_heads], c.n_kv_heads,
                  &key_scales_[sb + dst * c.n_kv_heads]);
      std::copy_n(&value_scales_[sb + src * c.n_kv_heads], c.n_kv_heads,
                  &value_scales_[sb + dst * c.n_kv_heads]);
    }
  }
}

void HostKVPool::read_block(int id, std::span<std::uint8_t> out) const {
  check_block(id, "read_block");
  if (out.size() != bytes_per_block())
    throw Error(
        fmt::format("read_block: {} bytes given, a block is {}", out.size(), bytes_per_block()));
  std::size_t at = 0;
  for_each_piece(keys_, values_, key_scales_, value_scales_, *this, id,
                 [&](const void* p, std::size_t n) {
                   std::memcpy(out.data() + at, p, n);
                   at += n;
                 });
}

void HostKVPool::write_block(int id, std::span<const std::uint8_t> in) {
  check_block(id, "write_block");
  if (in.size() != bytes_per_block())
    throw Error(
        fmt::format("write_block: {} bytes given, a block is {}", in.size(), bytes_per_block()));
  std::size_t at = 0;
  for_each_piece(keys_, values_, key_scales_, value_scales_, *this, id,
                 [&](void* p, std::size_t n) {
                   std::memcpy(p, in.data() + at, n);
                   at += n;
                 });
}

// --- KVSequence --------------------------------------------------------------------------------

void KVSequence::set_length(int length) {
  if (length < 0 || length > capacity())
    throw Error(fmt::format("KV cache length {} outside [0, {}]", length, capacity()));
  length_ = length;
}

void KVSequence::append_block(int id) {
  if (id < 0 || id >= pool_->num_blocks())
    throw Error(
        fmt::format("KV sequence: block {} outside the pool's {} blocks", id, pool_->num_blocks()));
  blocks_.push_back(id);
}

void KVSequence::replace_block(int index, int id) {
  if (index < 0 || index >= static_cast<int>(blocks_.size()) || id < 0 || id >= pool_->num_blocks())
    throw Error(fmt::format("KV sequence: cannot put block {} at logical block {}", id, index));
  blocks_[std::size_t(index)] = id;
}

const HostKVPool& KVSequence::host_pool(const char* what) const {
  const auto* host = dynamic_cast<const HostKVPool*>(pool_);
  if (!host)
    throw Error(fmt::format("{}: the KV pool is on the {}, not in host memory", what,
                            device_name(pool_->device())));
  return *host;
}

void KVSequence::store(int layer, int pos, int rows, const float* k, const float* v) {
  const ModelConfig& c = pool_->config();
  if (layer < 0 || layer >= c.n_layers || pos < 0 || rows < 0 || pos + rows > capacity()) {
    throw Error(fmt::format("KV cache store: layer {} positions {}..{} outside {} layers x {}",
                            layer, pos, pos + rows - 1, c.n_layers, capacity()));
  }
  auto& host = const_cast<HostKVPool&>(host_pool("KV cache store"));
  const int B = pool_->block_size();
  const std::size_t KV = c.kv_dim();
  // Consecutive positions are consecutive rows inside one block: store block by block.
  for (int done = 0; done < rows;) {
    const int p = pos + done;
    const int n = std::min(rows - done, B - p % B);
    host.store_rows(layer, row(p), n, k + std::size_t(done) * KV, v + std::size_t(done) * KV);
    done += n;
  }
}

void KVSequence::copy_position(int from, int to) {
  if (from < 0 || from >= capacity() || to < 0 || to >= capacity()) {
    throw Error(
        fmt::format("KV cache copy: position {} -> {} outside [0, {})", from, to, capacity()));
  }
  pool_->copy_row(row(from), row(to));
}

kernels::KVRowsView KVSequence::with_table(kernels::KVRowsView view) const {
  // One block at row 0 is a plain array: no table, so the contiguous path stays the plain loop.
  if (!(blocks_.size() == 1 && blocks_[0] == 0)) {
    view.block_table = blocks_.data();
    view.block_size = pool_->block_size();
  }
  return view;
}

kernels::KVRowsView KVSequence::keys(int layer) const {
  return with_table(host_pool("KV cache keys").keys(layer));
}

kernels::KVRowsView KVSequence::values(int layer) const {
  return with_table(host_pool("KV cache values").values(layer));
}

}  // namespace inferlab
