#pragma once
/// @file run_compare.hpp
/// @brief One workload served several ways, and the agreement check of every serving chapter:
/// serving the same requests another way (another policy, allocator or prefix cache) must not
/// change a single token.
#include <functional>
#include <vector>

#include "inferlab/serving/engine.hpp"
#include "inferlab/serving/paging.hpp"

namespace inferlab {

/// @brief True when every run of @p runs has the same number of results as the first and each
/// result's tokens equal the first run's at the same index (true for fewer than two runs).
bool same_tokens(const std::vector<EngineRun>& runs);

/// @brief Chapter 04's experiment: one workload under each batching policy.
struct PolicyComparison {
  std::vector<EngineRun> runs;          ///< one per scheduler config, in the order given
  std::vector<ServingMetrics> metrics;  ///< runs[i]'s, against the SLO
  bool same_tokens = true;              ///< each request's tokens equal under every policy
};

/// @brief Serves @p requests on @p engine once per config of @p configs (with the engine's own
/// KV memory), calling @p before_each (if set) before each run.
PolicyComparison compare_policies(
    const std::vector<Request>& requests, const std::vector<SchedulerConfig>& configs,
    const ServingEngine& engine, const Slo& slo,
    const std::function<void(const SchedulerConfig&)>& before_each = {});

/// @brief Chapter 05's experiment: one workload on the same KV budget under each allocator.
struct AllocatorComparison {
  std::vector<EngineRun> runs;          ///< one per allocator, in the order given
  std::vector<MemorySummary> memory;    ///< runs[i]'s memory_summary()
  std::vector<ServingMetrics> metrics;  ///< runs[i]'s, with no SLO
  bool same_tokens = true;              ///< each request's tokens equal under every allocator
};

/// @brief Serves @p requests on @p engine under @p config with @p memory, once per allocator of
/// @p allocators (memory.allocator set to it), calling @p before_each (if set) before each run.
AllocatorComparison compare_allocators(
    const std::vector<Request>& requests, const SchedulerConfig& config, MemoryConfig memory,
    const std::vector<Allocator>& allocators, const ServingEngine& engine,
    const std::function<void(Allocator)>& before_each = {});

}  // namespace inferlab
