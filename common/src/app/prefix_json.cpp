// The `--json` form of chapter 06's prefix cache study.
#include "inferlab/app/prefix_json.hpp"

#include <string>

#include "inferlab/app/serving_cli.hpp"

namespace inferlab {

nlohmann::json to_json(const PrefixSummary& s) {
  return {{"token_hit_rate", s.token_hit_rate},
          {"request_hit_rate", s.request_hit_rate},
          {"prompt_tokens", s.prompt_tokens},
          {"prefill_tokens_computed", s.prefill_tokens_computed},
          {"prefill_tokens_saved", s.prefill_tokens_saved},
          {"evictions", s.evictions},
          {"ttft_p50", s.ttft_p50},
          {"ttft_p99", s.ttft_p99},
          {"throughput_tokens_per_s", s.throughput_tokens_per_s},
          {"cache_bytes", s.cache_bytes},
          {"steps", s.steps},
          {"mean_running", s.mean_running},
          {"preemptions", s.preemptions}};
}

nlohmann::json to_json(const SideChannel& c) {
  return {{"ttft_seen_s", c.ttft_seen_s}, {"ttft_unseen_s", c.ttft_unseen_s}};
}

nlohmann::json to_json(const PrefixStudy& s) {
  nlohmann::json out = {{"schedule", order_name(s.order)},
                        {"same_tokens_across_caches", s.same_tokens}};
  nlohmann::json names = nlohmann::json::array();
  for (std::size_t i = 0; i < s.runs.size(); ++i) {
    names.push_back(s.summaries[i].cache);
    out[s.summaries[i].cache] = {{"requests", requests_json(s.runs[i])},
                                 {"summary", to_json(s.summaries[i])}};
  }
  out["caches"] = names;
  if (s.other_order)
    out["radix_" + std::string(order_name(s.other))] = {{"summary", to_json(*s.other_order)}};
  out["side_channel"] = {{"prefix_tokens", s.probe_tokens},
                         {"unsalted", to_json(s.open)},
                         {"salted", to_json(s.closed)}};
  const PrefillSaving& w = s.worked_example;
  out["seed_worked_number"] = {{"prefix_tokens", 2000},
                               {"config", "llama3-70b"},
                               {"hardware", "4x a100-sxm"},
                               {"prefill_s", w.prefill_seconds},
                               {"rate_requests_per_s", w.rate},
                               {"gpus", w.gpus},
                               {"gpu_seconds_saved_per_s", w.gpu_seconds_saved_per_second}};
  return out;
}

}  // namespace inferlab
