#pragma once
/// @file kv_sizing.hpp
/// @brief The KV calculator (kv_calc.hpp) applied to whole models, as chapter 02 reports it: a
/// named configuration's KV bytes in every number format with the fewest 80 GB GPUs that hold
/// it, and the check that the calculator's prediction for a loaded model is the number of bytes
/// its KV cache really allocates.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "inferlab/analysis/kv_calc.hpp"
#include "inferlab/model/model.hpp"
#include "inferlab/runtime/kv_cache.hpp"

namespace inferlab {

/// @brief One number format's line of the sizing table.
struct KVSizingRow {
  DType dtype = DType::bf16;        ///< the KV cache's number format
  double bytes_per_token = 0.0;     ///< kv_bytes_per_token()
  double bytes_per_sequence = 0.0;  ///< kv_bytes() of one sequence of the whole context
  MemoryFit one_gpu;                ///< bf16 weights + one sequence on one 80 GB GPU
  int gpus = 1;                    ///< fewest 80 GB GPUs holding the bf16 weights and >= 1 sequence
  std::int64_t max_sequences = 0;  ///< sequences of the whole context that fit on those GPUs
};

/// @brief The sizing table of one named configuration (chapter 02's `--kv-calc`).
struct KVSizingTable {
  std::string name;                 ///< the configuration's name, e.g. "llama3-70b"
  ModelConfig config;               ///< its shape
  std::int64_t context_tokens = 0;  ///< tokens each sequence holds
  std::vector<KVSizingRow> rows;    ///< one per all_dtypes(), widest first
};

/// @brief The most GPUs kv_sizing_table() tries before it reports that none fits.
inline constexpr int kMaxSizingDevices = 64;

/// @brief The fewest devices (from @p budget.devices up to @p max_devices) on which at least one
/// sequence fits next to the weights; @p budget.devices is left at that number (or at
/// @p max_devices when even they are not enough).
/// @return max_concurrent_sequences() on that many devices
/// @throws inferlab::Error as max_concurrent_sequences() does.
Concurrency fewest_devices_for_one_sequence(const ModelConfig& config, ServingBudget& budget,
                                            int max_devices = kMaxSizingDevices);

/// @brief Sizes the KV cache of the named configuration @p name at @p context tokens in every
/// number format: bytes per token and per sequence, whether one sequence fits next to the bf16
/// weights on one 80 GB GPU, and the fewest 80 GB GPUs that hold them with how many sequences.
/// @throws inferlab::Error for an unknown name or a context < 1.
KVSizingTable kv_sizing_table(const std::string& name, std::int64_t context);

/// @brief The calculator's prediction for a loaded model against the bytes its cache allocates.
struct KVPredictionCheck {
  DType type = DType::f32;                    ///< the cache's storage type
  double predicted_bytes_per_token = 0.0;     ///< kv_bytes_per_token(), int8 scales included
  std::size_t allocated_bytes_per_token = 0;  ///< KVCache::bytes_per_token()
  /// @brief True when the prediction is exact.
  bool equal() const { return predicted_bytes_per_token == double(allocated_bytes_per_token); }
};

/// @brief Predicts a token's KV bytes for @p config stored as @p type (int8 keeps one 4-byte
/// float scale per head for keys and one for values) and measures what a KVCache allocates.
KVPredictionCheck check_kv_prediction(const ModelConfig& config, DType type);

}  // namespace inferlab
