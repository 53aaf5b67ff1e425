// Speculative decoding on the CUDA runner (chapter 07, --device cuda): the chain proposers
// (draft model, early exit, n-gram) verify K tokens as one multi-token step of the GPU runner,
// roll back contiguous and paged device caches, and must give the CPU's greedy tokens (the
// golden ones). The tree proposer needs tree attention, which only the CPU runner has: on
// CUDA it must be refused with a clear error, never run with a causal mask.
#include <fstream>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "gpu_test_support.hpp"
#include "inferlab/model/tokenizer.hpp"
#include "inferlab/runtime/speculative_decoder.hpp"

using namespace inferlab;

TEST_CASE(
    "CUDA speculative decoding: chain proposers give the CPU's greedy tokens (contiguous "
    "and paged caches), the tree is refused",
    "[gpu][golden][speculative]") {
  test::require_gpu();
  const Model model = Model::load(test::model_file("stories260K.bin"));
  const Model random_draft = make_synthetic_model("stories260K");
  std::ifstream in(test::golden_file("stories260K_greedy.json"));
  const auto golden = nlohmann::json::parse(in);
  SamplingParams greedy;
  greedy.temperature = 0.0f;
  const int V = model.config().vocab_size;

  for (int block_size : {0, 5}) {
    SpecModelOptions cpu_storage, gpu_storage;
    cpu_storage.block_size = gpu_storage.block_size = block_size;
    gpu_storage.device = Device::cuda;
    SpecModel cpu_target(model, cpu_storage);
    SpecModel target(model, gpu_storage);
    SpecModel poor(random_draft, gpu_storage);
    auto exit3 = SpecModel::early_exit(model, 3, gpu_storage);
    REQUIRE(target.device() == Device::cuda);
    REQUIRE(exit3->device() == Device::cuda);

    struct Case {
      std::string label;
      std::unique_ptr<Proposer> proposer;
    };
    std::vector<Case> cases;
    cases.push_back(
        {"draft(random) k=4", std::make_unique<DraftModelProposer>(poor, greedy, 4, "draft")});
    cases.push_back({"early-exit 3 k=1",
                     std::make_unique<DraftModelProposer>(*exit3, greedy, 1, "early-exit")});
    cases.push_back({"early-exit 3 k=4",
                     std::make_unique<DraftModelProposer>(*exit3, greedy, 4, "early-exit")});
    cases.push_back({"ngram 3 k=4", std::make_unique<NgramProposer>(3, 4, V)});
    cases.push_back({"ngram 1 k=8", std::make_unique<NgramProposer>(1, 8, V)});

    for (const auto& g : golden["cases"]) {
      const std::vector<int> prompt = g["prompt_tokens"].get<std::vector<int>>();
      const int steps = g["steps"].get<int>();
      const std::vector<int> ends = {kBosToken};  // llama2.c models end a text with BOS
      const std::vector<int> cpu_tokens =
          plain_generate(cpu_target, prompt, steps, greedy, ends).tokens;
      CHECK(cpu_tokens == g["tokens"].get<std::vector<int>>());
      CHECK(plain_generate(target, prompt, steps, greedy, ends).tokens == cpu_tokens);
      for (Case& c : cases) {
        const SpecGeneration s =
            speculative_generate(target, *c.proposer, prompt, steps, greedy, ends);
        INFO(c.label << ", block size " << block_size << ", prompt '"
                     << g["prompt"].get<std::string>() << "', acceptance "
                     << s.stats.acceptance_rate());
        CHECK(s.tokens == cpu_tokens);
        if (block_size > 0)
          CHECK(target.allocator()->num_used() == (target.length() + block_size - 1) / block_size);
      }
    }

    // The tree needs tree attention: refused on CUDA, by the proposer and by the model.
    CHECK_THROWS_WITH(TreeProposer(*exit3, greedy, 2, 2), Catch::Contains("tree attention"));
    std::vector<float> logits;
    target.truncate(0);
    const std::vector<int> two = {1, 50};
    const std::vector<int> parents = {-1, -1};
    const TreeMask mask{0, parents};
    CHECK_THROWS_WITH(target.forward(two, LogitsMode::all, logits, &mask),
                      Catch::Contains("tree attention"));
  }
}
