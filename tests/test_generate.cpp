// The generation loop against llama2.c's greedy outputs, and its error handling.
#include <algorithm>
#include <fstream>

#include <nlohmann/json.hpp>

#include "inferlab/base/error.hpp"
#include "inferlab/runtime/generate.hpp"
#include "inferlab/runtime/repeated_generation.hpp"
#include "model_cases.hpp"
#include "test_support.hpp"

using namespace inferlab;

TEST_CASE("greedy generation reproduces every golden case exactly (ids and text)",
          "[golden][generate]") {
  std::ifstream in(test::golden_file("stories260K_greedy.json"));
  const Model model = Model::load(test::model_file("stories260K.bin"));
  const Tokenizer tok = Tokenizer::load(test::model_file("tok512.bin"), 512);
  const auto golden = nlohmann::json::parse(in);
  REQUIRE(golden["cases"].size() >= 6);
  for (const auto& c : golden["cases"]) {
    GenerateOptions o;
    o.prompt = c["prompt"].get<std::string>();
    o.steps = c["steps"].get<int>();
    o.sampling.temperature = 0.0f;
    std::string streamed;
    const GenerationResult r = generate(model, tok, o, [&](std::string_view s) { streamed += s; });
    INFO("case " << c["name"].get<std::string>());
    CHECK(r.prompt_tokens == c["prompt_tokens"].get<std::vector<int>>());
    REQUIRE(r.tokens == c["tokens"].get<std::vector<int>>());
    CHECK(r.text == c["text"].get<std::string>());
    CHECK(streamed == r.text);
    // One forward per position after the prompt, and one time stamp per generated token.
    const int generated = int(r.tokens.size() - r.prompt_tokens.size());
    CHECK(int(r.steps.size()) == generated);
    CHECK(r.metrics.output_tokens == generated);
    CHECK(r.steps.front().prefill);
    CHECK(r.steps.front().tokens_forwarded == int(r.prompt_tokens.size()));
    // The stop reason follows from the tokens: BOS last is eos, else the steps ran out.
    CHECK(r.stop_reason == (r.tokens.back() == kBosToken        ? GenerationStop::eos
                            : o.steps == model.config().seq_len ? GenerationStop::context
                                                                : GenerationStop::max_steps));
  }
}

TEST_CASE(
    "a generation stops at the model's end-of-text token (stories260K's greedy story ends "
    "after position 345)",
    "[model][generate]") {
  // Random weights never sample BOS on purpose: this one needs the real model.
  const Model model = Model::load(test::model_file("stories260K.bin"));
  const Tokenizer tok = Tokenizer::load(test::model_file("tok512.bin"), 512);
  GenerateOptions o;
  o.prompt = "Once upon a time";
  o.steps = 512;
  o.sampling.temperature = 0.0f;
  o.loop = LoopKind::cached;  // the naive loop gives the same tokens (the golden tests), slowly
  const GenerationResult r = generate(model, tok, o);
  CHECK(r.stop_reason == GenerationStop::eos);
  CHECK(std::string(generation_stop_name(r.stop_reason)) == "eos");
  CHECK(r.tokens.back() == kBosToken);
  CHECK(r.tokens.size() == 347);  // positions 0..345 forwarded, then the BOS sampled
  CHECK(r.steps.back().position == 345);
}

TEST_CASE("every generation says why it stopped: max_steps or context", "[unit][generate]") {
  const Model model = make_synthetic_model("stories260K");
  const Tokenizer tok = Tokenizer::synthetic(model.config().vocab_size);
  GenerateOptions o;
  o.prompt = "ab";
  o.sampling.temperature = 0.0f;
  o.loop = LoopKind::cached;
  SECTION("--steps below the context") {
    o.steps = 40;
    const GenerationResult r = generate(model, tok, o);
    CHECK(r.stop_reason == GenerationStop::max_steps);
    CHECK(std::string(generation_stop_name(r.stop_reason)) == "max_steps");
    CHECK(r.tokens.size() == 41);
  }
  SECTION("the whole context (steps 0), which greedy on these random weights fills") {
    o.steps = 0;
    const GenerationResult r = generate(model, tok, o);
    CHECK(r.stop_reason == GenerationStop::context);
    CHECK(std::string(generation_stop_name(r.stop_reason)) == "context");
    CHECK(r.tokens.size() == std::size_t(model.config().seq_len) + 1);
  }
}

TEST_CASE("keep_logits returns one row per forwarded position, matching the sampled tokens",
          "[invariant][generate]") {
  const test::ModelCases mc = test::model_cases();
  const Model& model = mc.model;
  const Tokenizer& tok = mc.tokenizer;
  GenerateOptions o;
  o.prompt = "Once upon a time";
  o.steps = static_cast<int>(tok.encode(o.prompt).size()) + 3;  // the prompt, then 3 greedy steps
  o.sampling.temperature = 0.0f;
  o.keep_logits = true;
  const GenerationResult r = generate(model, tok, o);
  REQUIRE(r.logits.size() == std::size_t(o.steps));
  // Row pos is the distribution after forwarding tokens[pos]; greedy picks its argmax.
  for (std::size_t pos = r.prompt_tokens.size() - 1; pos < r.logits.size(); ++pos) {
    const auto& row = r.logits[pos];
    CHECK(std::max_element(row.begin(), row.end()) - row.begin() == r.tokens[pos + 1]);
  }
}

TEST_CASE("generation rejects invalid requests before doing any work", "[unit][generate]") {
  const Model model = make_synthetic_model("stories260K");
  const Tokenizer tok = Tokenizer::synthetic(512);
  GenerateOptions o;
  o.prompt = "a long prompt that does not fit in a handful of positions";
  o.steps = 4;
  REQUIRE_THROWS_WITH(generate(model, tok, o), Catch::Contains("only 4 positions"));
  o.steps = -1;
  REQUIRE_THROWS_WITH(generate(model, tok, o), Catch::Contains("steps = -1"));
  o.steps = 16;
  o.prompt = "hi";
  o.sampling.temperature = -1.0f;
  REQUIRE_THROWS_WITH(generate(model, tok, o), Catch::Contains("temperature"));
  o.sampling.temperature = 1.0f;
  o.sampling.top_p = 0.0f;
  REQUIRE_THROWS_WITH(generate(model, tok, o), Catch::Contains("top_p"));
  const Tokenizer wrong = Tokenizer::synthetic(600);
  o.sampling.top_p = 1.0f;
  REQUIRE_THROWS_WITH(generate(model, wrong, o), Catch::Contains("600 pieces"));
}

TEST_CASE("sampled generation is reproducible from its seed and stops at steps",
          "[unit][generate]") {
  const Model model = make_synthetic_model("stories260K");
  const Tokenizer tok = Tokenizer::synthetic(512);
  GenerateOptions o;
  o.prompt = "hello";
  o.steps = 20;
  o.sampling.temperature = 1.0f;
  o.sampling.top_p = 0.9f;
  o.sampling.seed = 99;
  const GenerationResult a = generate(model, tok, o), b = generate(model, tok, o);
  CHECK(a.tokens == b.tokens);
  CHECK(a.text == b.text);
  CHECK(a.tokens.size() <= 21);
  o.sampling.seed = 100;
  const GenerationResult c = generate(model, tok, o);
  CHECK(c.tokens != a.tokens);
}

TEST_CASE("the cuda device is refused with a clear reason where it cannot run", "[unit][device]") {
  CHECK(parse_device("cpu") == Device::cpu);
  CHECK(parse_device("cuda") == Device::cuda);
  REQUIRE_THROWS_WITH(parse_device("tpu"), Catch::Contains("cpu or cuda"));
  CHECK_NOTHROW(require_device(Device::cpu));
  const Model model = make_synthetic_model("stories260K");
  const Tokenizer tok = Tokenizer::synthetic(512);
  GenerateOptions o;
  o.prompt = "hi";
  o.steps = 8;
  o.device = Device::cuda;
  if (!cuda_backend_built()) {
    REQUIRE_THROWS_WITH(require_device(Device::cuda), Catch::Contains("no CUDA backend"));
    REQUIRE_THROWS_WITH(generate(model, tok, o), Catch::Contains("no CUDA backend"));
    return;
  }
  try {
    require_device(Device::cuda);
  } catch (const Error& e) {
    // A CUDA build on a machine without a usable GPU (the CI machines).
    CHECK_THAT(e.what(), Catch::Contains("no usable CUDA device"));
    REQUIRE_THROWS_WITH(generate(model, tok, o), Catch::Contains("no usable CUDA device"));
    return;
  }
  // A GPU is present: the CUDA backend refuses only what it does not support.
  o.kv_type = DType::int8;
  REQUIRE_THROWS_WITH(generate(model, tok, o), Catch::Contains("f32 only"));
}

TEST_CASE("repeated generation: each step's median over the runs, the median run's metrics",
          "[unit][generate]") {
  const Model model = make_synthetic_model("stories260K");
  const Tokenizer tok = Tokenizer::synthetic(model.config().vocab_size);
  GenerateOptions o;
  o.prompt = "Once upon a time";
  o.steps = 24;
  o.sampling.temperature = 0.8f;
  o.sampling.seed = 7;
  o.loop = LoopKind::naive;
  o.keep_logits = true;
  const GenerationResult first = generate(model, tok, o);
  o.keep_logits = false;
  const RepeatedGeneration rep = repeat_for_medians(model, tok, o, 3, first);
  CHECK(rep.reps == 3);
  CHECK(rep.median.tokens == first.tokens);
  CHECK(rep.median.logits == first.logits);  // the first run's, kept for --dump-logits
  REQUIRE(rep.spread.size() == first.steps.size());
  double widest = 0.0;
  for (std::size_t i = 0; i < rep.spread.size(); ++i) {
    CHECK(rep.spread[i] >= 0.0);
    CHECK(rep.median.steps[i].seconds > 0.0);
    CHECK(rep.median.steps[i].position == first.steps[i].position);
    widest = std::max(widest, rep.spread[i]);
  }
  CHECK(rep.max_spread == widest);
  // One run: its own times, no spread.
  const RepeatedGeneration one = repeat_for_medians(model, tok, o, 1, first);
  for (std::size_t i = 0; i < first.steps.size(); ++i)
    CHECK(one.median.steps[i].seconds == first.steps[i].seconds);
  CHECK(one.max_spread == 0.0);
  // Another seed gives other tokens: the repetition is refused.
  GenerateOptions other = o;
  other.sampling.seed = 8;
  CHECK_THROWS_AS(repeat_for_medians(model, tok, other, 2, first), Error);
}
