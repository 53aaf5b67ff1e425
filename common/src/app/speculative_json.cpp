// The JSON form of speculative decoding's results.
#include "inferlab/app/speculative_json.hpp"

namespace inferlab {

nlohmann::json to_json(const ProposerRun& run) {
  const SpecStats& s = run.run.stats;
  nlohmann::json per_position = nlohmann::json::array();
  for (int d = 0; d < static_cast<int>(s.tried_at.size()); ++d)
    per_position.push_back(s.acceptance_at(d));
  return {{"name", run.name},
          {"k", run.k},
          {"acceptance_rate", s.acceptance_rate()},
          {"acceptance_per_position", per_position},
          {"mean_accepted_per_round", s.mean_accepted_per_round()},
          {"target_forwards_per_token", run.report.target_forwards_per_token},
          {"tokens_per_s", run.report.tokens_per_s},
          {"speedup_measured", run.report.speedup_measured},
          {"speedup_predicted", run.report.speedup_predicted},
          {"speedup_predicted_ideal", run.report.speedup_predicted_ideal},
          {"draft_cost_ratio", run.report.draft_cost_ratio},
          {"verify_cost_ratio", run.report.verify_cost_ratio},
          {"generated_tokens", run.run.generated},
          {"same_tokens_as_plain", run.same_as_plain}};
}

nlohmann::json to_json(const ProposerComparison& comparison) {
  nlohmann::json proposers = nlohmann::json::array();
  for (const ProposerRun& r : comparison.runs) proposers.push_back(to_json(r));
  return {{"tokens", comparison.runs.front().run.tokens},
          {"plain_tokens_per_s", comparison.plain.generated / comparison.plain.decode_seconds},
          {"proposers", proposers}};
}

nlohmann::json to_json(const SpecSimPoint& point) {
  return {{"batch", point.batch},
          {"plain_step_s", point.plain_step_s},
          {"draft_step_s", point.draft_step_s},
          {"verify_step_s", point.verify_step_s},
          {"speedup", point.speedup},
          {"verify_memory_bound", point.verify_memory_bound}};
}

nlohmann::json to_json(const SpecSimCurve& curve) {
  nlohmann::json points = nlohmann::json::array();
  for (const SpecSimPoint& p : curve.points) points.push_back(to_json(p));
  return {{"k", curve.k}, {"break_even_batch", curve.break_even}, {"points", points}};
}

nlohmann::json to_json(const SpecSimSweep& sweep) {
  nlohmann::json simulation = nlohmann::json::array();
  nlohmann::json proposers = nlohmann::json::array();
  for (const SpecSimCurve& c : sweep.curves) {
    simulation.push_back(to_json(c));
    const SpecSimPoint& one = c.points.front();
    proposers.push_back({{"name", "draft (simulated)"},
                         {"k", c.k},
                         {"acceptance_rate", sweep.alpha},
                         {"mean_accepted_per_round", one.tokens_per_round - 1.0},
                         {"tokens_per_s", one.tokens_per_s},
                         {"speedup_measured", nullptr},
                         {"speedup_predicted", one.speedup}});
  }
  return {{"context", sweep.context}, {"proposers", proposers}, {"simulation", simulation}};
}

}  // namespace inferlab
