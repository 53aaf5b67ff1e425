#pragma once
/// @file exercises/04_kv_calculator/exercise.hpp
/// @brief Exercise 04: a KV-cache calculator, and how many users Llama-3-70B can serve at a 4K
/// context on 4x A100-80GB with an FP16, FP8 or INT4 KV cache.
///
/// All byte counts are doubles: an INT4 number takes half a byte.

namespace inferlab::ex04 {

/// @brief The shape a KV cache depends on, and the parameter count the weights take.
struct KvModel {
  const char* name;
  int layers;     ///< L
  int kv_heads;   ///< Nkv (8 for Llama-3-70B's grouped-query attention, not its 64 query heads)
  int head_dim;   ///< hs
  double params;  ///< number of parameters (for the weights' bytes)
};

/// Llama-3-70B: 80 layers, 8 KV heads of 128, 70,553,706,496 parameters (embedding and
/// classifier included), the same numbers as inferlab::named_config("llama3-70b").
inline constexpr KvModel kLlama3_70b{"Llama-3-70B", 80, 8, 128, 70553706496.0};

/// Bytes per stored number.
inline constexpr double kFp16Bytes = 2.0;
inline constexpr double kFp8Bytes = 1.0;
inline constexpr double kInt4Bytes = 0.5;

/// An A100-80GB's memory as the datasheet prints it: 80 GB = 80e9 bytes.
inline constexpr double kA100MemoryBytes = 80e9;

/// @brief KV bytes one token adds to the cache: a key and a value vector per layer per KV head.
double kv_bytes_per_token(const KvModel& model, double bytes_per_value);

/// @brief KV bytes of one sequence of @p tokens tokens.
double kv_bytes_per_sequence(const KvModel& model, double bytes_per_value, long long tokens);

/// @brief How many sequences of @p context tokens fit in the memory of @p gpus GPUs of
/// @p bytes_per_gpu each, after the weights (stored at @p bytes_per_weight per parameter).
/// Every sequence reserves its whole context. 0 if the weights alone do not fit.
long long max_concurrent_sequences(const KvModel& model, double bytes_per_weight,
                                   double kv_bytes_per_value, long long context, int gpus,
                                   double bytes_per_gpu);

}  // namespace inferlab::ex04
