// A generation timed several times: each step's median and spread.
#include "inferlab/runtime/repeated_generation.hpp"

#include <algorithm>
#include <numeric>

#include <fmt/format.h>

#include "inferlab/base/error.hpp"
#include "inferlab/runtime/metrics.hpp"

namespace inferlab {

RepeatedGeneration repeat_for_medians(const Model& model, const Tokenizer& tokenizer,
                                      const GenerateOptions& options, int reps,
                                      GenerationResult first) {
  if (reps < 1) throw ParameterError("reps", fmt::format("{}: must be >= 1", reps));
  auto logits = std::move(first.logits);  // only the first run's are kept
  std::vector<GenerationResult> runs;
  runs.push_back(std::move(first));
  for (int i = 1; i < reps; ++i) {
    runs.push_back(generate(model, tokenizer, options));
    if (runs.back().tokens != runs.front().tokens)
      throw Error("a repetition generated different tokens (the loop is not deterministic)");
  }
  // The run whose end-to-end time is the median gives the latency metrics.
  std::vector<std::size_t> order(runs.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return runs[a].metrics.e2e < runs[b].metrics.e2e;
  });
  RepeatedGeneration r;
  r.reps = reps;
  r.median = runs[order[order.size() / 2]];
  r.median.logits = std::move(logits);
  r.spread.assign(r.median.steps.size(), 0.0);
  for (std::size_t i = 0; i < r.median.steps.size(); ++i) {
    std::vector<double> t;
    for (const GenerationResult& x : runs) t.push_back(x.steps[i].seconds);
    const Summary s = summarize(t);
    r.median.steps[i].seconds = s.p50;
    r.spread[i] = s.p50 > 0 ? (s.max - s.min) / s.p50 : 0.0;
  }
  if (!r.spread.empty()) r.max_spread = *std::max_element(r.spread.begin(), r.spread.end());
  return r;
}

}  // namespace inferlab
