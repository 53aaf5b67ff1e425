// One workload served several ways, and the serving chapters' agreement check: the same tokens
// whatever the engine's choices.
#include "inferlab/serving/run_compare.hpp"

namespace inferlab {

bool same_tokens(const std::vector<EngineRun>& runs) {
  for (const EngineRun& r : runs) {
    if (r.requests.size() != runs.front().requests.size()) return false;
    for (std::size_t i = 0; i < r.requests.size(); ++i)
      if (r.requests[i].tokens != runs.front().requests[i].tokens) return false;
  }
  return true;
}

PolicyComparison compare_policies(const std::vector<Request>& requests,
                                  const std::vector<SchedulerConfig>& configs,
                                  const ServingEngine& engine, const Slo& slo,
                                  const std::function<void(const SchedulerConfig&)>& before_each) {
  const MemoryConfig& memory = engine.sim ? engine.sim->memory : engine.real.memory;
  PolicyComparison out;
  for (const SchedulerConfig& config : configs) {
    if (before_each) before_each(config);
    out.runs.push_back(engine.serve(requests, config, memory));
    out.metrics.push_back(run_serving_metrics(out.runs.back(), slo));
  }
  // Each request has its own RNG and the forward pass is batch-invariant.
  out.same_tokens = same_tokens(out.runs);
  return out;
}

AllocatorComparison compare_allocators(const std::vector<Request>& requests,
                                       const SchedulerConfig& config, MemoryConfig memory,
                                       const std::vector<Allocator>& allocators,
                                       const ServingEngine& engine,
                                       const std::function<void(Allocator)>& before_each) {
  AllocatorComparison out;
  for (const Allocator allocator : allocators) {
    memory.allocator = allocator;
    if (before_each) before_each(allocator);
    out.runs.push_back(engine.serve(requests, config, memory));
    out.memory.push_back(memory_summary(out.runs.back()));
    out.metrics.push_back(run_serving_metrics(out.runs.back(), Slo{}));
  }
  // Paging changes where keys and values live, never a token.
  out.same_tokens = same_tokens(out.runs);
  return out;
}

}  // namespace inferlab
