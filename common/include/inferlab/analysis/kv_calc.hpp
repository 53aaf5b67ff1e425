#pragma once
/// @file kv_calc.hpp
/// @brief The KV-cache memory calculator: how many bytes a token's keys and values take, how
/// much a context of N tokens takes, and how many sequences fit in what the weights leave free.
///
/// For every layer and every KV head a token stores one key and one value vector of head_dim
/// numbers, so
///
///     KV bytes per token = 2 (K and V) x L x Nkv x hs x bytes(dtype)
///
/// Llama-3-70B (L = 80, Nkv = 8, hs = 128) in BF16: 2 x 80 x 8 x 128 x 2 = 327,680 bytes
/// = 320 KiB per token; 4,096 tokens = 1,342,177,280 bytes = 1.25 GiB (= 1,280 MiB, which the
/// source text writes as "1.28 GB": it is 1.34 GB in decimal units); 131,072 tokens (128K)
/// = 40 GiB. InferLab prints binary units (KiB, MiB, GiB = 2^10, 2^20, 2^30 bytes) and says so;
/// format_bytes() (base/units.hpp) adds the decimal GB next to them. Number formats are
/// inferlab::DType (kernels/dtype.hpp): any of them here, not only those the KV storage implements.
///
/// Quantities are doubles: INT4 stores half a byte per number, and every value here is a
/// multiple of 0.5 far below 2^53, so the arithmetic is still exact.

#include <cstdint>
#include <string>
#include <vector>

#include "inferlab/kernels/dtype.hpp"
#include "inferlab/model/model.hpp"

namespace inferlab {

/// @brief KV bytes one token adds to the cache: 2 x L x Nkv x hs x bytes(@p kv), plus
/// 2 x L x Nkv x @p scale_bytes_per_head for quantised caches that keep one scale per
/// (token, head) for keys and one for values (InferLab's int8 cache: 4-byte float scales).
double kv_bytes_per_token(const ModelConfig& config, DType kv, double scale_bytes_per_head = 0.0);
/// @brief KV bytes of one sequence of @p tokens tokens.
double kv_bytes(const ModelConfig& config, DType kv, std::int64_t tokens,
                double scale_bytes_per_head = 0.0);
/// @brief Bytes to store every parameter (ModelConfig::n_params()) in @p weights.
double weight_bytes(const ModelConfig& config, DType weights);

/// @brief A serving deployment's memory: what is there, and what it holds.
struct ServingBudget {
  double memory_bytes_per_device = 80e9;  ///< e.g. an "80GB" A100: 80e9
  int devices = 1;                        ///< weights and KV are spread over all of them
  DType weight_dtype = DType::bf16;       ///< format the weights are stored in
  DType kv_dtype = DType::bf16;           ///< format the KV cache is stored in
  std::int64_t context_tokens = 4096;     ///< tokens each sequence may hold (prompt + output)
  /// Share of the memory set aside for activations, the runtime and fragmentation (vLLM's
  /// gpu_memory_utilization = 0.9 sets aside 0.1). 0 = count every byte.
  double reserved_fraction = 0.0;
};

/// @brief The answer to "how many sequences fit?", with the numbers behind it.
struct Concurrency {
  double total_bytes = 0.0;            ///< memory_bytes_per_device x devices
  double usable_bytes = 0.0;           ///< total x (1 - reserved_fraction)
  double weight_bytes = 0.0;           ///< the model's parameters in weight_dtype
  double kv_budget_bytes = 0.0;        ///< usable - weights (may be negative: does not fit)
  double kv_bytes_per_sequence = 0.0;  ///< kv_bytes(context_tokens)
  std::int64_t max_sequences = 0;      ///< floor(kv_budget / per sequence), 0 if none fits
};

/// @brief How many sequences of budget.context_tokens tokens fit next to the weights.
/// @note Assumes every sequence reserves its whole context up front (a contiguous cache); a
/// paged cache (chapter 05) only holds the tokens that exist, so it fits more on average.
/// @throws inferlab::Error for devices < 1, a non-positive memory size or context.
Concurrency max_concurrent_sequences(const ModelConfig& config, const ServingBudget& budget);

/// @brief Whether one step's resident memory fits on a device: the weights plus the KV cache of
/// every sequence in the batch. Calculators report a configuration that does not fit instead of
/// computing a time for it silently.
struct MemoryFit {
  double weight_bytes = 0.0;  ///< the model's parameters in the weight type
  double kv_bytes = 0.0;      ///< batch x kv_bytes(context)
  double needed_bytes = 0.0;  ///< weights + KV
  double device_bytes = 0.0;  ///< what the device has
  bool fits = false;          ///< needed_bytes <= device_bytes
};

/// @brief The memory a decode step over @p batch sequences of @p context tokens holds, against
/// @p device_bytes.
/// @param config the model shape
/// @param weights the weights' number format
/// @param kv the KV cache's number format
/// @param batch sequences decoding together (>= 1)
/// @param context tokens in each sequence's KV cache (>= 0)
/// @param device_bytes the device's memory, bytes (> 0)
/// @return the bytes needed, by part, and whether they fit
/// @throws inferlab::Error for batch < 1, context < 0 or a non-positive device size.
MemoryFit memory_fit(const ModelConfig& config, DType weights, DType kv, std::int64_t batch,
                     std::int64_t context, double device_bytes);

/// @brief "fits: needs 16.1 GB of the device's 80.0 GB" or "does not fit: needs 141.1 GB
/// (weights 141.1 GB + KV cache 0.0 GB), the device has 80.0 GB" (decimal GB, as vendors print
/// device memory).
/// @param fit a memory_fit() result
/// @return one line, starting "fits:" or "does not fit:"
std::string memory_fit_message(const MemoryFit& fit);

}  // namespace inferlab
