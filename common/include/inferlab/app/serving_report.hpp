#pragma once
/// @file serving_report.hpp
/// @brief The tables chapters 04 and 05 print: the policies side by side, the decode sweep, the
/// allocators side by side, the block size sweep and swap vs recompute.

#include <string>
#include <vector>

#include "inferlab/runtime/metrics.hpp"
#include "inferlab/serving/decode_sweep.hpp"
#include "inferlab/serving/paging.hpp"
#include "inferlab/serving/run_compare.hpp"

namespace inferlab {

/// @brief One column per policy of @p c: lengths, duration, throughput, latency percentiles,
/// goodput under @p slo, steps and slot occupancy.
void print_policy_table(const PolicyComparison& c, const Slo& slo);

/// @brief The decode sweep of @p s, one row per batch size, and the ridge its ends imply (or
/// why the timings are too noisy to tell).
void print_decode_sweep(const DecodeSweep& s);

/// @brief One column per allocator of @p s: budget, peak reserved and used, waste, concurrency,
/// preemptions, swap traffic, throughput and what sharing saved.
void print_memory_table(const std::vector<MemorySummary>& s);

/// @brief The block size sweep of @p b: waste, concurrency and attention time per block size.
void print_block_size_sweep(const BlockSizeSweep& b);

/// @brief Swap vs recompute of @p table for the model @p config on @p hardware (their names),
/// with the KV cache stored as @p kv_type (the type the table's swap bytes were priced in).
void print_swap_vs_recompute(const std::vector<SwapVsRecompute>& table, const std::string& config,
                             const std::string& hardware, DType kv_type);

}  // namespace inferlab
