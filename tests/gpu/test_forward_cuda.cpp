// The forward pass on the GPU (the CUDA runner over one contiguous cache per sequence) against
// the CPU one, on the golden greedy prompts.
#include <algorithm>
#include <fstream>

#include <nlohmann/json.hpp>

#include "gpu_test_support.hpp"
#include "inferlab/base/error.hpp"
#include "inferlab/model/model.hpp"
#include "inferlab/runtime/forward.hpp"
#include "inferlab/runtime/runner.hpp"

using namespace inferlab;

namespace {

// Logits tolerance (absolute; stories260K's logits are O(10)). Where the CPU's top-2 margin
// exceeds 2 * kLogitTol, logits within kLogitTol cannot change the argmax, so the greedy tokens
// must be equal; below it a near-tie may legitimately flip.
constexpr double kLogitTol = 2e-3;

int argmax_of(const float* x, int n) { return int(std::max_element(x, x + n) - x); }

// Largest minus second largest.
float top2_margin(const float* x, int n) {
  float a = -INFINITY, b = -INFINITY;
  for (int i = 0; i < n; ++i) {
    if (x[i] > a) {
      b = a;
      a = x[i];
    } else if (x[i] > b) {
      b = x[i];
    }
  }
  return a - b;
}

}  // namespace

TEST_CASE("CUDA forward matches the CPU logits and greedy tokens on the golden prompts",
          "[gpu][golden][transformer]") {
  test::require_gpu();
  const Model model = Model::load(test::model_file("stories260K.bin"));
  std::ifstream in(test::golden_file("stories260K_greedy.json"));
  const auto golden = nlohmann::json::parse(in);
  REQUIRE(golden["cases"].size() >= 6);
  const int V = model.config().vocab_size;
  const auto gpu = make_runner(model, Device::cuda);
  ForwardPass cpu(model);
  std::vector<float> cpu_logits, gpu_logits;
  int near_ties = 0, compared = 0;

  for (const auto& c : golden["cases"]) {
    const auto tokens = c["tokens"].get<std::vector<int>>();
    const auto prompt = c["prompt_tokens"].get<std::vector<int>>();
    INFO("case " << c["name"].get<std::string>());
    REQUIRE(tokens.size() >= 2);

    // 1. Token by token (the decode shape), teacher-forced with the golden sequence so that
    //    both devices see the same inputs. Record where the CPU's choice is a near-tie.
    KVCache cache(model.config());
    KVCache gpu_cache = make_cache(*gpu);
    std::vector<bool> near_tie(tokens.size(), false);
    for (std::size_t pos = 0; pos + 1 < tokens.size(); ++pos) {
      cpu.forward(std::span<const int>(&tokens[pos], 1), int(pos), cache, LogitsMode::last,
                  cpu_logits);
      run_sequence(*gpu, std::span<const int>(&tokens[pos], 1), int(pos), gpu_cache,
                   LogitsMode::last, gpu_logits);
      const auto rep = test::all_close(gpu_logits, cpu_logits, V, kLogitTol, 0.0);
      INFO("position " << pos << ": max abs logit error " << rep.max_abs_err);
      REQUIRE(rep.ok);
      ++compared;
      if (top2_margin(cpu_logits.data(), V) > 2 * kLogitTol) {
        REQUIRE(argmax_of(gpu_logits.data(), V) == argmax_of(cpu_logits.data(), V));
      } else {
        near_tie[pos] = true;
        ++near_ties;
      }
    }
    CHECK(gpu_cache.length() == int(tokens.size()) - 1);

    // 2. One prefill call over the whole sequence with every row of logits (the T > 1 path:
    //    matrix-matrix products, causal attention inside the call).
    const int T = int(tokens.size()) - 1;
    KVCache cache_all(model.config());
    cpu.forward(std::span<const int>(tokens.data(), T), 0, cache_all, LogitsMode::all, cpu_logits);
    std::vector<float> all;
    KVCache gpu_cache_all = make_cache(*gpu);
    run_sequence(*gpu, std::span<const int>(tokens.data(), T), 0, gpu_cache_all, LogitsMode::all,
                 all);
    const auto rep = test::all_close(all, cpu_logits, long(all.size()), kLogitTol, 0.0);
    INFO("prefill of " << T << " tokens: max abs logit error " << rep.max_abs_err);
    REQUIRE(rep.ok);

    // 3. Greedy generation with the argmax on the device: prefill the prompt in one call, then
    //    decode. It must reproduce the golden tokens up to the first near-tie (after which
    //    a different but equally valid continuation is allowed).
    KVCache gpu_cache_greedy = make_cache(*gpu);
    std::vector<int> seq = prompt, next;
    auto greedy_step = [&](std::span<const int> chunk, int start_pos) {
      const BatchEntry entry{chunk, start_pos, &gpu_cache_greedy};
      gpu->step_greedy(std::span<const BatchEntry>(&entry, 1), next);
    };
    greedy_step(seq, 0);
    while (seq.size() < tokens.size()) {
      const std::size_t pos = seq.size() - 1;  // the position whose logits chose `next`
      if (near_tie[pos]) break;
      INFO("generated position " << seq.size());
      REQUIRE(next[0] == tokens[seq.size()]);
      seq.push_back(next[0]);
      if (seq.size() == tokens.size()) break;
      greedy_step(std::span<const int>(&seq.back(), 1), int(seq.size()) - 1);
    }
  }
  INFO(compared << " positions compared, " << near_ties << " near-ties");
  CHECK(near_ties * 10 <= compared);
}

TEST_CASE("CUDA runner rejects bad steps and leaves the cache unchanged", "[gpu][runner]") {
  test::require_gpu();
  SyntheticOptions opt;
  opt.seq_len = 16;
  const Model model = make_synthetic_model("stories260K", opt);
  const auto gpu = make_runner(model, Device::cuda);
  KVCache cache = make_cache(*gpu);
  std::vector<float> logits;
  const std::vector<int> bad = {1, 512}, neg = {-1}, one = {1}, long_seq(17, 5);
  auto forward = [&](const std::vector<int>& tokens, std::size_t count, int start_pos) {
    run_sequence(*gpu, std::span<const int>(tokens.data(), count), start_pos, cache,
                 LogitsMode::last, logits);
  };
  REQUIRE_THROWS_AS(forward(one, 0, 0), Error);
  REQUIRE_THROWS_WITH(forward(bad, 2, 0), Catch::Contains("token id 512"));
  REQUIRE_THROWS_WITH(forward(neg, 1, 0), Catch::Contains("token id -1"));
  REQUIRE_THROWS_WITH(forward(one, 1, 3), Catch::Contains("start_pos is 3"));
  REQUIRE_THROWS_WITH(forward(long_seq, 17, 0), Catch::Contains("exceed the context of 16"));
  CHECK(cache.length() == 0);
  forward(one, 1, 0);
  CHECK(cache.length() == 1);
  cache.clear();
  CHECK(cache.length() == 0);

  // The CUDA attention kernels are causal only, and read device pools only.
  const int parents[] = {-1};
  const TreeMask tree{0, parents};
  const BatchEntry tree_entry{one, 0, &cache, &tree};
  REQUIRE_THROWS_WITH(gpu->step(std::span<const BatchEntry>(&tree_entry, 1), LogitsMode::last,
                                logits),
                      Catch::Contains("no tree attention"));
  KVCache host_cache(model.config());
  REQUIRE_THROWS_WITH(run_sequence(*gpu, one, 0, host_cache, LogitsMode::last, logits),
                      Catch::Contains("KV pools it made itself"));
  CHECK(cache.length() == 0);
}
