#pragma once
/// @file serving_json.hpp
/// @brief The JSON of the serving results chapters 04 and 05 print with --json: one to_json()
/// per core result struct, with the field names the chapters' output has always had.

#include <nlohmann/json.hpp>

#include "inferlab/runtime/metrics.hpp"
#include "inferlab/serving/decode_sweep.hpp"
#include "inferlab/serving/paging.hpp"
#include "inferlab/serving/run_compare.hpp"

namespace inferlab {

/// @brief mean, p50, p90 and p99 of @p s.
nlohmann::json to_json(const Summary& s);

/// @brief requests, output_tokens, duration_s, throughput_tokens_per_s,
/// throughput_requests_per_s, goodput_requests_per_s, slo_attainment, and the ttft_s, tpot_s,
/// itl_s and e2e_s summaries of @p m.
nlohmann::json to_json(const ServingMetrics& m);

/// @brief One row per batch size of @p s: batch, step_s, step_spread, tokens_per_s,
/// tokens_per_s_per_sequence.
nlohmann::json to_json(const DecodeSweep& s);

/// @brief kv_bytes_budget, peak_kv_bytes_used, peak_kv_bytes_reserved, waste_fraction,
/// max_concurrent_sequences, preemptions, swapped_bytes, throughput_tokens_per_s, block_size,
/// blocks_total and bytes_saved_by_sharing of @p s.
nlohmann::json to_json(const MemorySummary& s);

/// @brief Chapter 04's results: "requests" (each request's prompt, tokens, text and, under
/// "latencies", its arrival, admission, slot and latencies under every policy), "summary"
/// (per policy: to_json(ServingMetrics) with steps, mean_occupancy and mean_slot_utilisation)
/// and same_tokens_across_policies.
nlohmann::json to_json(const PolicyComparison& c);

/// @brief Chapter 05's results: per allocator, its "requests" (requests_json()) and "summary"
/// (to_json(MemorySummary) with duration_s, ttft_p50_s and ttft_p99_s); "allocators" (their
/// names, in order) and same_tokens_across_allocators.
nlohmann::json to_json(const AllocatorComparison& c);

}  // namespace inferlab
