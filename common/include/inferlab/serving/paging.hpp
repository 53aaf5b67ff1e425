#pragma once
/// @file paging.hpp
/// @brief Chapter 05's measurements of KV memory: how much of what is reserved is used, the
/// picture of it, what a block size costs, and when swapping beats recomputing.

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "inferlab/serving/engine.hpp"
#include "inferlab/analysis/hardware.hpp"
#include "inferlab/analysis/roofline.hpp"

namespace inferlab {

/// @brief KV memory over one run.
struct MemorySummary {
  std::string allocator;                   ///< "contiguous" or "paged"
  std::size_t kv_bytes_budget = 0;         ///< the memory the allocator may use (0: unlimited)
  std::size_t peak_kv_bytes_used = 0;      ///< most bytes holding valid keys/values at once
  std::size_t peak_kv_bytes_reserved = 0;  ///< most bytes reserved at once
  /// Reserved but unused over reserved, averaged over time (each step weighted by its length).
  double waste_fraction = 0.0;
  int max_concurrent_sequences = 0;      ///< most sequences running in one step
  int preemptions = 0;                   ///< sequences preempted
  std::size_t swapped_bytes = 0;         ///< bytes copied to and from the swap area
  double throughput_tokens_per_s = 0.0;  ///< output tokens over the run's duration
  int block_size = 0;                    ///< positions per block (paged), else 0
  std::size_t blocks_total = 0;          ///< blocks in the pool (paged), else 0
  /// Most bytes that sharing saved at once (parallel samples): positions the sequences see
  /// minus positions stored, times bytes per position. 0 without sharing.
  std::size_t peak_bytes_saved_by_sharing = 0;
};

/// @brief The summary of @p run.
MemorySummary memory_summary(const EngineRun& run);

/// @brief The two ways back for a preempted sequence of @p tokens cached positions.
struct SwapVsRecompute {
  long tokens = 0;                 ///< cached positions of the preempted sequence
  double swap_seconds = 0.0;       ///< out and back in over the host link: 2 * bytes / bandwidth
  double recompute_seconds = 0.0;  ///< prefill of the same tokens (roofline bound)
};

/// @brief Swap vs recompute for a sequence of @p tokens positions of @p config on @p hardware,
/// whose host link moves @p link_bytes_per_s (e.g. PCIe 5.0 x16, about 50 GB/s usable).
/// @note Swap moves 2 * tokens * kv_bytes_per_token bytes; recompute costs a prefill of tokens
/// (about 2 * n_params * tokens FLOPs, plus attention), so recompute wins for short sequences on
/// fast GPUs and swap for long ones, where attention's quadratic cost grows.
SwapVsRecompute swap_vs_recompute(const ModelConfig& config, const Hardware& hardware,
                                  const CostOptions& cost, long tokens, double link_bytes_per_s);

/// @brief Time of one decode step's attention on the CPU, over @p seqs sequences of
/// @p context cached positions of one layer of @p config, stored in blocks of @p block_size
/// (0: contiguous) in a pool whose blocks are handed out in scrambled order. Median of @p reps.
double measure_attention_step_seconds(const ModelConfig& config, int seqs, int context,
                                      int block_size, int reps);

/// @brief Swap vs recompute at 256, 1K, 4K, 16K and 64K tokens, up to the model's context
/// (chapter 05's table on the simulated clock).
std::vector<SwapVsRecompute> swap_vs_recompute_table(const ModelConfig& config,
                                                     const Hardware& hardware,
                                                     const CostOptions& cost,
                                                     double link_bytes_per_s);

/// @brief One block size of block_size_sweep().
struct BlockSizeRow {
  int block_size = 0;                ///< positions per block
  double waste_fraction = 0.0;       ///< MemorySummary::waste_fraction of the run
  int max_concurrent_sequences = 0;  ///< MemorySummary::max_concurrent_sequences of the run
  double attention_seconds = 0.0;    ///< measure_attention_step_seconds() at this block size
  double vs_contiguous = 0.0;        ///< attention_seconds / the contiguous layout's
};

/// @brief What the block size trades: memory waste against the time of a paged attention step.
struct BlockSizeSweep {
  int sequences = 8;                ///< sequences in the timed attention step
  int context = 0;                  ///< positions of each: 1024, or the model's context if shorter
  int reps = 9;                     ///< repetitions of each timing (the median is kept)
  double contiguous_seconds = 0.0;  ///< the same step on a contiguous cache
  std::vector<BlockSizeRow> rows;   ///< block sizes 1, 4, 8, 16, 32, 64, 128
};

/// @brief Serves the same workload with paged memory at block sizes 1..128 (@p serve runs the
/// engine with the memory it is given: @p memory with the allocator set to paged and the block
/// size changed) and times one layer's attention step of @p config at each block size.
BlockSizeSweep block_size_sweep(const std::function<EngineRun(const MemoryConfig&)>& serve,
                                const MemoryConfig& memory, const ModelConfig& config);

}  // namespace inferlab
