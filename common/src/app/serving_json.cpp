// The serving chapters' JSON, one mapping per core result struct.
#include "inferlab/app/serving_json.hpp"

#include "inferlab/app/serving_cli.hpp"

namespace inferlab {

nlohmann::json to_json(const Summary& s) {
  return {{"mean", s.mean}, {"p50", s.p50}, {"p90", s.p90}, {"p99", s.p99}};
}

nlohmann::json to_json(const ServingMetrics& m) {
  return {{"requests", m.requests},
          {"output_tokens", m.output_tokens},
          {"duration_s", m.duration},
          {"throughput_tokens_per_s", m.throughput_tokens},
          {"throughput_requests_per_s", m.throughput_requests},
          {"goodput_requests_per_s", m.goodput},
          {"slo_attainment", m.slo_attainment},
          {"ttft_s", to_json(m.ttft)},
          {"tpot_s", to_json(m.tpot)},
          {"itl_s", to_json(m.itl)},
          {"e2e_s", to_json(m.e2e)}};
}

nlohmann::json to_json(const DecodeSweep& s) {
  nlohmann::json rows = nlohmann::json::array();
  for (const DecodeSweepRow& r : s.rows)
    rows.push_back({{"batch", r.batch},
                    {"step_s", r.step_seconds},
                    {"step_spread", r.step_spread},
                    {"tokens_per_s", r.tokens_per_second},
                    {"tokens_per_s_per_sequence", r.tokens_per_second_per_sequence}});
  return rows;
}

nlohmann::json to_json(const MemorySummary& s) {
  return {{"kv_bytes_budget", s.kv_bytes_budget},
          {"peak_kv_bytes_used", s.peak_kv_bytes_used},
          {"peak_kv_bytes_reserved", s.peak_kv_bytes_reserved},
          {"waste_fraction", s.waste_fraction},
          {"max_concurrent_sequences", s.max_concurrent_sequences},
          {"preemptions", s.preemptions},
          {"swapped_bytes", s.swapped_bytes},
          {"throughput_tokens_per_s", s.throughput_tokens_per_s},
          {"block_size", s.block_size},
          {"blocks_total", s.blocks_total},
          {"bytes_saved_by_sharing", s.peak_bytes_saved_by_sharing}};
}

namespace {
// When one request arrived, started and got its tokens under one policy.
nlohmann::json latency_json(const RequestResult& r) {
  const RequestMetrics& m = r.metrics;
  return {{"arrival_s", r.request.arrival},
          {"admitted_s", r.admitted_at},
          {"slot", r.slot},
          {"ttft_s", m.ttft},
          {"tpot_s", m.tpot},
          {"e2e_s", m.e2e},
          {"itl_s", m.itl},
          {"output_tokens", m.output_tokens}};
}
}  // namespace

nlohmann::json to_json(const PolicyComparison& c) {
  nlohmann::json requests = nlohmann::json::array();
  const std::vector<RequestResult>& first = c.runs.front().requests;
  for (std::size_t i = 0; i < first.size(); ++i) {
    const RequestResult& r = first[i];
    nlohmann::json latencies;
    for (const EngineRun& run : c.runs)
      latencies[policy_name(run.scheduler.policy)] = latency_json(run.requests[i]);
    requests.push_back({{"id", r.request.id},
                        {"prompt", r.request.prompt},
                        {"prompt_tokens", r.prompt_tokens},
                        {"tokens", r.tokens},
                        {"generated_tokens", r.generated()},
                        {"stop_reason", stop_reason_name(r.stop_reason)},
                        {"text", r.text},
                        {"latencies", latencies}});
  }
  nlohmann::json summary;
  for (std::size_t i = 0; i < c.runs.size(); ++i) {
    const EngineRun& run = c.runs[i];
    nlohmann::json s = to_json(c.metrics[i]);
    s["steps"] = run.steps.size();
    s["mean_occupancy"] = run.mean_occupancy;
    s["mean_slot_utilisation"] = run.mean_slot_utilisation;
    summary[policy_name(run.scheduler.policy)] = s;
  }
  return {
      {"requests", requests}, {"summary", summary}, {"same_tokens_across_policies", c.same_tokens}};
}

nlohmann::json to_json(const AllocatorComparison& c) {
  nlohmann::json out = {{"same_tokens_across_allocators", c.same_tokens}};
  nlohmann::json names = nlohmann::json::array();
  for (std::size_t i = 0; i < c.runs.size(); ++i) {
    const ServingMetrics& m = c.metrics[i];
    nlohmann::json summary = to_json(c.memory[i]);
    summary["duration_s"] = m.duration;
    summary["ttft_p50_s"] = m.ttft.p50;
    summary["ttft_p99_s"] = m.ttft.p99;
    names.push_back(c.runs[i].allocator);
    out[c.runs[i].allocator] = {{"requests", requests_json(c.runs[i])}, {"summary", summary}};
  }
  out["allocators"] = names;
  return out;
}

}  // namespace inferlab
