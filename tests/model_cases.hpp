#pragma once
// The model and greedy cases of the invariant tests: the tests that check a property of this
// code (the cached loop gives the naive loop's bits, a batch gives each sequence's own tokens,
// speculative greedy gives the target's greedy, ...) rather than llama2.c's numbers. They run on
// stories260K with llama2.c's golden outputs when both are here, and otherwise on what is:
//
//   stories260K.bin + tok512.bin + golden file   llama2.c's greedy cases, read from the file
//   stories260K.bin + tok512.bin only            the same prompts, expectations from generate()
//   nothing                                      a synthetic model of the same shape (random
//                                                weights, a file-free tokenizer), the same
//                                                prompts, expectations from generate()
//
// so a learner without any data file still runs them. Under INFERLAB_REQUIRE_MODELS=1 a missing
// file fails the test instead, as for the golden tests.
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "inferlab/runtime/generate.hpp"
#include "test_support.hpp"

namespace inferlab::test {

/// One greedy case, in the layout of stories260K_greedy.json.
struct GreedyCase {
  std::string name;
  std::string prompt;
  int steps = 0;                   ///< positions to forward, like llama2.c's -n
  std::vector<int> prompt_tokens;  ///< BOS first
  std::vector<int> tokens;         ///< BOS, prompt, then the greedy tokens (a final BOS included)
  std::string text;                ///< what the generation prints
};

/// The model an invariant test runs on, its tokenizer, and the greedy cases it checks.
struct ModelCases {
  Model model;
  Tokenizer tokenizer;
  std::vector<GreedyCase> cases;
  bool real = false;    ///< stories260K.bin (else the synthetic model of its shape)
  bool golden = false;  ///< the expectations are llama2.c's (else this code's generate())
};

/// Seed of the synthetic stand-in: not the default seed, so that a test's "random draft"
/// (make_synthetic_model with the default seed) stays a different model from the target.
inline constexpr std::uint64_t kStandInSeed = 260;

/// The golden file's prompts and budgets, for when the file is not here.
struct PromptCase {
  const char* name;
  const char* prompt;
  int steps;
};
inline constexpr PromptCase kGreedyPrompts[] = {
    {"once", "Once upon a time", 256},
    {"empty", "", 256},
    {"lily_tom", "Lily and Tom went to the", 200},
    {"cat", "The cat sat on the", 200},
    {"boy", "One day, a little boy named Tim found a", 150},
    {"short", "Hi", 64},
};

/// The greedy case of @p prompt computed by this code: generate() with the cached loop.
inline GreedyCase computed_case(const Model& model, const Tokenizer& tok, const PromptCase& p) {
  GenerateOptions o;
  o.prompt = p.prompt;
  o.steps = p.steps;
  o.sampling.temperature = 0.0f;
  o.loop = LoopKind::cached;
  const GenerationResult r = generate(model, tok, o);
  return {p.name, p.prompt, p.steps, r.prompt_tokens, r.tokens, r.text};
}

/// Loads the best model at hand (see the table at the top of this file) and its greedy cases.
inline ModelCases model_cases() {
  const auto model_path = models_dir() / "stories260K.bin";
  const auto tok_path = models_dir() / "tok512.bin";
  const auto golden_path = golden_dir() / "stories260K_greedy.json";
  if (models_required()) {  // no fallback: every file must be here
    require_file(model_path);
    require_file(tok_path);
    require_file(golden_path, kHowToGetGolden);
  }
  const bool real = std::filesystem::exists(model_path) && std::filesystem::exists(tok_path);
  ModelCases mc{real ? Model::load(model_path.string())
                     : make_synthetic_model("stories260K", SyntheticOptions{kStandInSeed}),
                real ? Tokenizer::load(tok_path.string(), 512) : Tokenizer::synthetic(512),
                {},
                real,
                real && std::filesystem::exists(golden_path)};
  if (mc.golden) {
    std::ifstream in(golden_path);
    const nlohmann::json doc = nlohmann::json::parse(in);
    for (const auto& c : doc["cases"]) {
      mc.cases.push_back({c["name"].get<std::string>(), c["prompt"].get<std::string>(),
                          c["steps"].get<int>(), c["prompt_tokens"].get<std::vector<int>>(),
                          c["tokens"].get<std::vector<int>>(), c["text"].get<std::string>()});
    }
  } else {
    for (const PromptCase& p : kGreedyPrompts)
      mc.cases.push_back(computed_case(mc.model, mc.tokenizer, p));
  }
  std::printf("model: %s (%s)\n", mc.model.name().c_str(),
              mc.golden ? "expectations: llama2.c's golden outputs"
                        : "expectations: this code's cached greedy loop; no golden file here");
  std::fflush(stdout);
  return mc;
}

}  // namespace inferlab::test
