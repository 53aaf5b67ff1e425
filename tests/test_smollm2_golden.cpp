// InferLab on a real chat model (SmolLM2-135M-Instruct, Q4_1 GGUF) against llama.cpp, an
// independent engine: tests/golden/smollm2_f32.json and smollm2_q4_1.json, written by
// scripts/golden/smollm2_golden.py (provenance in tests/golden/README.md).
//
// InferLab converts the Q4_1 weights to float at load and runs float activations with a float
// KV cache, so it computes what llama.cpp computes on an F32 GGUF of the same dequantized
// weights: the F32 file is the exact reference. llama.cpp on the Q4_1 file rounds activations
// to 8 bits in its dot products, so that run is a looser comparison.
//
// Each golden sequence (prompt ids, then llama.cpp's greedy tokens) is forwarded in one call
// with every position's logits: position first + i chooses generated token i, so the argmax
// there is InferLab's greedy token given the same history (forward = decode, token by token,
// is the invariant tests' business). The token ids come from the files: no tokenizer involved.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "inferlab/model/model.hpp"
#include "inferlab/runtime/forward.hpp"
#include "test_support.hpp"

using namespace inferlab;

namespace {

constexpr const char* kModel = "SmolLM2-135M-Instruct.Q4_1.gguf";

/// The committed golden file @p name (these files live in the repository, not beside the
/// models: they are small).
nlohmann::json read_golden(const std::string& name) {
  const auto path = std::filesystem::path(INFERLAB_SOURCE_DIR) / "tests" / "golden" / name;
  std::ifstream in(path);
  INFO("golden file " << path.string());
  REQUIRE(in);
  return nlohmann::json::parse(in);
}

/// InferLab against one golden case: the largest logit difference over every recorded value,
/// the mean over the rows' even samples (the top logits, recorded because they decide the
/// tokens, would bias it), and the greedy tokens.
struct CaseResult {
  double max_diff = 0.0, sum_diff = 0.0;
  long values = 0;       // logits compared
  long sampled = 0;      // of which in the rows' even samples (sum_diff is over these)
  int matched = 0;       // generated tokens equal to the reference's before the first difference
  float our_gap = 0.0f;  // InferLab's top-two gap at the first difference (0 if none)
  double mean_diff() const { return sampled ? sum_diff / double(sampled) : 0.0; }
};

float top_two_gap(const float* row, int n) {
  float a = -INFINITY, b = -INFINITY;
  for (int i = 0; i < n; ++i) {
    if (row[i] > a) {
      b = a;
      a = row[i];
    } else if (row[i] > b) {
      b = row[i];
    }
  }
  return a - b;
}

CaseResult compare_case(ForwardPass& pass, const nlohmann::json& c, int stride) {
  const int V = pass.model().config().vocab_size;
  const auto prompt = c["prompt_ids"].get<std::vector<int>>();
  const auto generated = c["generated_ids"].get<std::vector<int>>();
  std::vector<int> tokens = prompt;
  tokens.insert(tokens.end(), generated.begin(), generated.end() - 1);
  KVCache cache(pass.model().config(), int(tokens.size()), DType::f32);
  std::vector<float> logits;
  pass.forward(tokens, 0, cache, LogitsMode::all, logits);
  REQUIRE(logits.size() == tokens.size() * std::size_t(V));

  CaseResult r;
  auto compare = [&](long pos, int id, double expected, bool in_sample) {
    const double d = std::fabs(double(logits[std::size_t(pos) * V + id]) - expected);
    r.max_diff = std::max(r.max_diff, d);
    ++r.values;
    if (in_sample) {
      r.sum_diff += d;
      ++r.sampled;
    }
  };
  // The highest logits at every position.
  const auto top_ids = c["top_ids"].get<std::vector<std::vector<int>>>();
  const auto top_logits = c["top_logits"].get<std::vector<std::vector<double>>>();
  REQUIRE(top_ids.size() == tokens.size());
  for (std::size_t p = 0; p < tokens.size(); ++p)
    for (std::size_t k = 0; k < top_ids[p].size(); ++k)
      compare(long(p), top_ids[p][k], top_logits[p][k], false);
  // The rows: every stride-th logit and the row's highest.
  for (const auto& row : c["rows"]) {
    const long pos = row["pos"].get<long>();
    const auto sample = row["sample"].get<std::vector<double>>();
    REQUIRE(sample.size() == std::size_t((V + stride - 1) / stride));
    for (std::size_t j = 0; j < sample.size(); ++j) compare(pos, int(j) * stride, sample[j], true);
    const auto ids = row["top_ids"].get<std::vector<int>>();
    const auto values = row["top_logits"].get<std::vector<double>>();
    for (std::size_t k = 0; k < ids.size(); ++k) compare(pos, ids[k], values[k], false);
  }
  // Greedy tokens: InferLab's argmax at each step, given the reference's history.
  const std::size_t first = prompt.size() - 1;
  for (; r.matched < int(generated.size()); ++r.matched) {
    const float* row = logits.data() + (first + std::size_t(r.matched)) * V;
    if (int(std::max_element(row, row + V) - row) != generated[std::size_t(r.matched)]) {
      r.our_gap = top_two_gap(row, V);
      break;
    }
  }
  return r;
}

struct Golden {
  nlohmann::json data;
  Model model;
};

Golden load(const std::string& file, WeightFormat weights) {
  nlohmann::json data = read_golden(file);
  Model model = Model::load(test::model_file(kModel), LoadOptions{weights});
  REQUIRE(model.config().vocab_size == data["vocab_size"].get<int>());
  REQUIRE(data["cases"].size() >= 4);
  return {std::move(data), std::move(model)};
}

}  // namespace

TEST_CASE("SmolLM2 logits within 1e-3 of llama.cpp on F32 weights and 48 equal greedy tokens",
          "[golden][model][slow]") {
  // The float reference: every tensor converted to float32 at load.
  const Golden g = load("smollm2_f32.json", WeightFormat::f32);
  ForwardPass pass(g.model);
  const int steps = g.data["steps"].get<int>();
  REQUIRE(steps >= 48);
  for (const auto& c : g.data["cases"]) {
    const auto name = c["name"].get<std::string>();
    const auto gaps = c["gaps"].get<std::vector<double>>();
    const CaseResult r = compare_case(pass, c, g.data["sample_stride"].get<int>());
    std::printf(
        "smollm2 vs llama.cpp F32, %s: max |dlogit| %.2e, mean %.2e over %ld sampled, %ld values; "
        "greedy %d/%d tokens; smallest reference gap %.5f\n",
        name.c_str(), r.max_diff, r.mean_diff(), r.sampled, r.values, r.matched, steps,
        *std::min_element(gaps.begin(), gaps.end()));
    INFO("case " << name << ": max |logit difference| " << r.max_diff << ", greedy tokens equal "
                 << r.matched << " of " << steps);
    CHECK(r.max_diff <= 1e-3);
    // A case may stop early only where the reference's top two logits are within 1e-3.
    if (r.matched < steps) {
      INFO("first different token at step " << r.matched << ": reference gap "
                                            << gaps[std::size_t(r.matched)] << ", InferLab's gap "
                                            << r.our_gap);
      CHECK(gaps[std::size_t(r.matched)] < 1e-3);
    }
  }
}

TEST_CASE("SmolLM2 stays close to llama.cpp on Q4_1 (mean logit difference under 0.3)",
          "[golden][model][slow]") {
  // The file's own storage: the Q4_1 blocks kept packed, run by matmul_quant.
  const Golden g = load("smollm2_q4_1.json", WeightFormat::file);
  REQUIRE_FALSE(g.model.float_weights());
  ForwardPass pass(g.model);
  const int steps = g.data["steps"].get<int>();
  for (const auto& c : g.data["cases"]) {
    const auto name = c["name"].get<std::string>();
    const auto gaps = c["gaps"].get<std::vector<double>>();
    // Up to the first step where llama.cpp's own choice is close (gap under 0.5), the two
    // engines' rounding differences cannot change the greedy token.
    const int decisive =
        int(std::find_if(gaps.begin(), gaps.end(), [](double gap) { return gap < 0.5; }) -
            gaps.begin());
    const CaseResult r = compare_case(pass, c, g.data["sample_stride"].get<int>());
    std::printf(
        "smollm2 vs llama.cpp Q4_1, %s: max |dlogit| %.3f, mean %.3f over %ld sampled, %ld values; "
        "greedy %d/%d tokens, the first %d decisive (gap >= 0.5)\n",
        name.c_str(), r.max_diff, r.mean_diff(), r.sampled, r.values, r.matched, steps, decisive);
    INFO("case " << name << ": mean |logit difference| " << r.mean_diff() << ", greedy tokens "
                 << "equal " << r.matched << ", llama.cpp's first gap under 0.5 at step "
                 << decisive);
    CHECK(r.mean_diff() < 0.3);
    CHECK(r.matched >= decisive);
  }
}
