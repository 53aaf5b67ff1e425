// The forward pass on the GPU against the CPU one, on the golden greedy prompts.
#include <algorithm>
#include <fstream>

#include <nlohmann/json.hpp>

#include "gpu_test_support.hpp"
#include "inferlab/runtime/forward.hpp"
#include "inferlab/kernels/cuda/transformer.hpp"
#include "inferlab/model/model.hpp"

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
  cuda::CudaTransformer gpu(model.config(), model.weights());
  ForwardPass cpu(model);
  std::vector<float> cpu_logits, gpu_logits(V);
  int near_ties = 0, compared = 0;

  for (const auto& c : golden["cases"]) {
    const auto tokens = c["tokens"].get<std::vector<int>>();
    const auto prompt = c["prompt_tokens"].get<std::vector<int>>();
    INFO("case " << c["name"].get<std::string>());
    REQUIRE(tokens.size() >= 2);

    // 1. Token by token (the decode shape), teacher-forced with the golden sequence so that
    //    both devices see the same inputs. Record where the CPU's choice is a near-tie.
    KVCache cache(model.config());
    gpu.reset();
    std::vector<bool> near_tie(tokens.size(), false);
    for (std::size_t pos = 0; pos + 1 < tokens.size(); ++pos) {
      cpu.forward(std::span<const int>(&tokens[pos], 1), int(pos), cache, LogitsMode::last,
                  cpu_logits);
      gpu.forward(&tokens[pos], 1, int(pos), false, gpu_logits.data());
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
    CHECK(gpu.length() == int(tokens.size()) - 1);

    // 2. One prefill call over the whole sequence with every row of logits (the T > 1 path:
    //    matrix-matrix products, causal attention inside the call).
    const int T = int(tokens.size()) - 1;
    KVCache cache_all(model.config());
    cpu.forward(std::span<const int>(tokens.data(), T), 0, cache_all, LogitsMode::all, cpu_logits);
    std::vector<float> all(std::size_t(T) * V);
    gpu.reset();
    gpu.forward(tokens.data(), T, 0, true, all.data());
    const auto rep = test::all_close(all, cpu_logits, long(all.size()), kLogitTol, 0.0);
    INFO("prefill of " << T << " tokens: max abs logit error " << rep.max_abs_err);
    REQUIRE(rep.ok);

    // 3. Greedy generation with the argmax on the device: prefill the prompt in one call, then
    //    decode. It must reproduce the golden tokens up to the first near-tie (after which
    //    a different but equally valid continuation is allowed).
    gpu.reset();
    std::vector<int> seq = prompt;
    int next = gpu.forward_greedy(seq.data(), int(seq.size()), 0);
    while (seq.size() < tokens.size()) {
      const std::size_t pos = seq.size() - 1;  // the position whose logits chose `next`
      if (near_tie[pos]) break;
      INFO("generated position " << seq.size());
      REQUIRE(next == tokens[seq.size()]);
      seq.push_back(next);
      if (seq.size() == tokens.size()) break;
      next = gpu.forward_greedy(&seq.back(), 1, int(seq.size()) - 1);
    }
  }
  INFO(compared << " positions compared, " << near_ties << " near-ties");
  CHECK(near_ties * 10 <= compared);
}

TEST_CASE("CudaTransformer rejects bad calls and leaves its cache unchanged",
          "[gpu][transformer]") {
  test::require_gpu();
  SyntheticOptions opt;
  opt.seq_len = 16;
  const Model model = make_synthetic_model("stories260K", opt);
  cuda::CudaTransformer gpu(model.config(), model.weights());
  std::vector<float> logits(std::size_t(17) * model.config().vocab_size);
  const std::vector<int> bad = {1, 512}, neg = {-1}, one = {1}, long_seq(17, 5);
  REQUIRE_THROWS_AS(gpu.forward(one.data(), 0, 0, false, logits.data()), std::invalid_argument);
  REQUIRE_THROWS_WITH(gpu.forward(bad.data(), 2, 0, false, logits.data()),
                      Catch::Contains("token id 512"));
  REQUIRE_THROWS_WITH(gpu.forward(neg.data(), 1, 0, false, logits.data()),
                      Catch::Contains("token id -1"));
  REQUIRE_THROWS_WITH(gpu.forward(one.data(), 1, 3, false, logits.data()),
                      Catch::Contains("start_pos is 3"));
  REQUIRE_THROWS_WITH(gpu.forward(long_seq.data(), 17, 0, false, logits.data()),
                      Catch::Contains("exceed the context of 16"));
  CHECK(gpu.length() == 0);
  gpu.forward(one.data(), 1, 0, false, logits.data());
  CHECK(gpu.length() == 1);
  gpu.reset();
  CHECK(gpu.length() == 0);
  CHECK(gpu.weight_bytes() > 0);

  Weights no_wq = model.weights();
  no_wq.wq = nullptr;
  REQUIRE_THROWS_WITH(cuda::CudaTransformer(model.config(), no_wq), Catch::Contains("wq"));
  ModelConfig odd = model.config();
  odd.n_kv_heads = 3;
  REQUIRE_THROWS_AS(cuda::CudaTransformer(odd, model.weights()), std::invalid_argument);
}
