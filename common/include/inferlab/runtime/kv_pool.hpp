#pragma once
/// @file kv_pool.hpp
/// @brief Where keys and values live: a pool of fixed-size blocks on one device.
///
/// A block holds `block_size` positions of every layer's keys and values (all Nkv heads). A
/// sequence's cache is a list of blocks (its block table, see KVSequence). Two memory managers
/// use pools:
///  - the contiguous cache of chapters 01-04 is a pool with ONE block as large as the sequence
///    (position p is row p: exactly the layout of a plain array);
///  - PagedAttention (chapter 05) shares one pool of many small blocks between all sequences.
/// The model runners read and write rows through the block table, so the forward pass does not
/// know which manager it serves.

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "inferlab/base/device.hpp"
#include "inferlab/kernels/kv_quant.hpp"
#include "inferlab/model/model.hpp"

namespace inferlab {

/// @brief Bytes one position occupies in a KV cache: keys and values of every layer
/// (2 * L * KV elements), plus for int8 one float scale per (layer, K or V, KV head). What the
/// storage allocates, where the calculator's kv_bytes_per_token() (analysis/kv_calc.hpp)
/// predicts it for any format.
/// @throws inferlab::Error for a type the KV storage does not implement (kv_storage_supported()).
std::size_t kv_storage_bytes_per_token(const ModelConfig& config, DType type);

/// @brief A fixed number of KV blocks on one device. Storage layout, per layer l: keys and
/// values each (num_blocks * block_size, KV) elements of type(); int8 scales (rows, Nkv).
class KVPool {
 public:
  virtual ~KVPool() = default;
  KVPool(const KVPool&) = delete;             ///< a pool is its memory: never copied
  KVPool& operator=(const KVPool&) = delete;  ///< see KVPool(const KVPool&)

  virtual Device device() const = 0;  ///< where the blocks are stored

  const ModelConfig& config() const { return config_; }  ///< the model whose KV it stores
  DType type() const { return type_; }                   ///< storage type of every value
  int block_size() const { return block_size_; }         ///< positions per block
  int num_blocks() const { return num_blocks_; }         ///< blocks in the pool
  /// @brief Rows per layer: num_blocks * block_size.
  std::size_t rows() const { return std::size_t(num_blocks_) * block_size_; }
  /// @brief Bytes one position takes (kv_storage_bytes_per_token()).
  std::size_t bytes_per_token() const { return kv_storage_bytes_per_token(config_, type_); }
  /// @brief Bytes one block takes: block_size * bytes_per_token().
  std::size_t bytes_per_block() const { return bytes_per_token() * block_size_; }
  /// @brief Bytes the pool holds: num_blocks * bytes_per_block().
  std::size_t bytes() const { return bytes_per_block() * num_blocks_; }

  /// @brief Copies every layer's keys and values of block @p src into block @p dst
  /// (copy-on-write, chapter 05).
  virtual void copy_block(int src, int dst) = 0;
  /// @brief Copies row @p src to row @p dst in every layer (keys, values, scales).
  virtual void copy_row(std::size_t src, std::size_t dst) = 0;
  /// @brief Copies block @p id out to host memory (bytes_per_block() bytes; swap-out).
  virtual void read_block(int id, std::span<std::uint8_t> out) const = 0;
  /// @brief Copies a block saved by read_block() back into block @p id (swap-in).
  virtual void write_block(int id, std::span<const std::uint8_t> in) = 0;

 protected:
  /// @throws inferlab::Error for num_blocks or block_size < 1, a pool too large to address, or a
  /// type the KV storage does not implement (bf16, fp8, int4).
  KVPool(const ModelConfig& config, int num_blocks, int block_size, DType type);
  /// @brief Throws unless 0 <= id < num_blocks().
  void check_block(int id, const char* what) const;

 private:
  ModelConfig config_;
  int num_blocks_, block_size_;
  DType type_;
};

/// @brief A pool in host memory, read and written by the CPU forward pass.
class HostKVPool final : public KVPool {
 public:
  /// @brief Allocates (and zeroes) num_blocks * block_size positions.
  /// @throws inferlab::Error (naming the bytes) for bad sizes or when memory cannot be had.
  HostKVPool(const ModelConfig& config, int num_blocks, int block_size, DType type);

  Device device() const override { return Device::cpu; }  ///< always the CPU

  /// @brief Stores @p n consecutive rows from @p row of @p layer: keys and values, each
  /// (n, KV) floats, converted to the storage type.
  void store_rows(int layer, std::size_t row, int n, const float* k, const float* v);
  /// @brief View of one layer's keys (no block table yet: KVSequence adds its own).
  kernels::KVRowsView keys(int layer) const;
  kernels::KVRowsView values(int layer) const;  ///< see keys()

  void copy_block(int src, int dst) override;
  void copy_row(std::size_t src, std::size_t dst) override;
  void read_block(int id, std::span<std::uint8_t> out) const override;
  void write_block(int id, std::span<const std::uint8_t> in) override;

 private:
  std::size_t elements_per_layer() const { return rows() * std::size_t(config().kv_dim()); }
  std::size_t scales_per_layer() const { return rows() * std::size_t(config().n_kv_heads); }
  std::vector<std::uint8_t> keys_, values_;       // (L, rows, KV) elements of type()
  std::vector<float> key_scales_, value_scales_;  // (L, rows, Nkv), int8 only
};

/// @brief A pool that has sizes but no storage: the simulated clock's memory (chapters 04-05
/// simulate Llama-3-8B on an H100 without 16 GB of RAM). Block operations only check ids.
class VirtualKVPool final : public KVPool {
 public:
  /// @brief A pool of the given shape that stores nothing.
  VirtualKVPool(const ModelConfig& config, int num_blocks, int block_size, DType type)
      : KVPool(config, num_blocks, block_size, type) {}
  Device device() const override { return Device::cpu; }  ///< nominally the host
  void copy_block(int src, int dst) override {
    check_block(src, "copy_block");
    check_block(dst, "copy_block");
  }
  void copy_row(std::size_t, std::size_t) override {}
  void read_block(int id, std::span<std::uint8_t>) const override { check_block(id, "read_block"); }
  void write_block(int id, std::span<const std::uint8_t>) override {
    check_block(id, "write_block");
  }
};

}  // namespace inferlab
