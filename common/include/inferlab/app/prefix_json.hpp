#pragma once
/// @file prefix_json.hpp
/// @brief The `--json` form of chapter 06's prefix cache study (serving/prefix_report.hpp). One
/// to_json() per result struct; the chapter adds what it was run with (model, clock, workload,
/// KV type and memory). Field names are a contract read outside the repository.

#include <nlohmann/json.hpp>

#include "inferlab/serving/prefix_report.hpp"

namespace inferlab {

/// @brief Hit rates, prefill tokens computed and saved, evictions, TTFT p50/p99, throughput,
/// the cache's peak bytes, steps, mean running sequences and preemptions.
nlohmann::json to_json(const PrefixSummary& summary);

/// @brief bob's TTFT for the prefix alice sent and for an unseen one.
nlohmann::json to_json(const SideChannel& channel);

/// @brief The study: `caches` (their names), one object per cache (its requests and summary),
/// `radix_<other order>` when the radix cache also ran in the other order, `schedule`,
/// `same_tokens_across_caches`, `side_channel` and `seed_worked_number` (the worked example).
nlohmann::json to_json(const PrefixStudy& study);

}  // namespace inferlab
