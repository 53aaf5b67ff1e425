// The CUDA model runner against the CPU one: paged attention against its reference twin, the
// ragged batched step on the golden prompts, and the serving engine on the GPU (contiguous and
// paged KV memory) giving the golden greedy tokens.
#include <cmath>
#include <fstream>
#include <limits>
#include <memory>

#include <nlohmann/json.hpp>

#include "gpu_test_support.hpp"
#include "inferlab/serving/engine.hpp"
#include "inferlab/kernels/cuda/paged_attention_cuda.hpp"
#include "inferlab/kernels/attention.hpp"
#include "inferlab/runtime/runner.hpp"

using namespace inferlab;

namespace {

// stories260K, its golden greedy cases, and a runner for it on each device.
struct GoldenRunners {
  Model model;
  nlohmann::json golden;
  std::unique_ptr<ModelRunner> cpu, gpu;
  GoldenRunners()
      : model(Model::load(test::model_file("stories260K.bin"))),
        golden(nlohmann::json::parse(std::ifstream(test::golden_file("stories260K_greedy.json")))),
        cpu(make_runner(model, Device::cpu)),
        gpu(make_runner(model, Device::cuda)) {}
  GoldenRunners(const GoldenRunners&) = delete;  // the runners point at `model`
  GoldenRunners& operator=(const GoldenRunners&) = delete;
};

}  // namespace

TEST_CASE("paged attention: every CUDA version equals the reference", "[gpu][kernel][paged]") {
  test::require_gpu();
  for (int B : {1, 7, 16}) {
    const int Nh = 8, Nkv = 2, hs = 32, KV = Nkv * hs, blocks = 120;
    // Three sequences of 33, 1 and 70 positions; tables taken from a shuffled pool.
    const std::vector<int> lengths = {33, 1, 70};
    std::vector<int> tables, offsets, token_seq, pos;
    std::vector<int> ids(static_cast<std::size_t>(blocks));
    for (int i = 0; i < blocks; ++i) ids[std::size_t(i)] = (i * 17) % blocks;
    int next = 0;
    for (std::size_t e = 0; e < lengths.size(); ++e) {
      offsets.push_back(int(tables.size()));
      for (int b = 0; b < (lengths[e] + B - 1) / B; ++b)
        tables.push_back(ids[std::size_t(next++ % blocks)]);
      // Two query tokens per sequence (its last two positions), one if it has one position.
      for (int p = std::max(0, lengths[e] - 2); p < lengths[e]; ++p) {
        token_seq.push_back(int(e));
        pos.push_back(p);
      }
    }
    REQUIRE(next <= blocks);  // every table entry is a distinct block
    const int T = int(pos.size()), max_pos = 69;
    const auto kpool = test::random_floats(std::size_t(blocks) * B * KV, -1, 1, 1);
    const auto vpool = test::random_floats(kpool.size(), -1, 1, 2);
    const auto q = test::random_floats(std::size_t(T) * Nh * hs, -1, 1, 3);
    std::vector<float> want(q.size());
    kernels::paged_attention_ref(want.data(), q.data(), kpool.data(), vpool.data(), tables.data(),
                                 offsets.data(), token_seq.data(), pos.data(), T, Nh, Nkv, hs, B);
    cuda::DeviceBuffer<float> dk(kpool), dv(vpool), dq(q), dout(q.size());
    cuda::DeviceBuffer<int> dt(tables), doff(offsets), dseq(token_seq), dpos(pos);
    for (int v = 1; v <= kernels::paged_attention_cuda_versions(); ++v) {
      INFO("block size " << B << " version " << v);
      // NaN first: a version that writes nothing fails.
      dout.upload(std::vector<float>(q.size(), std::numeric_limits<float>::quiet_NaN()));
      cuda::DeviceBuffer<float> ws(
          kernels::paged_attention_cuda_workspace_floats(v, T, Nh, max_pos));
      kernels::paged_attention_cuda(v, dout.data(), dq.data(), dk.data(), dv.data(), dt.data(),
                                    doff.data(), dseq.data(), dpos.data(), T, Nh, Nkv, hs, B,
                                    max_pos, ws.data(), ws.size());
      CHECK(test::check_close("paged attention", dout.to_host(), want, 1e-5, 1e-4));
    }
  }
}

TEST_CASE("CUDA runner: the ragged batched step equals the CPU runner's on the golden prompts",
          "[gpu][golden][runner]") {
  test::require_gpu();
  const GoldenRunners runners;
  const auto& [model, golden, cpu, gpu] = runners;
  // Paged pools on both devices: blocks of 16, every sequence with its own table.
  auto cpu_pool = cpu->make_pool(256, 16, DType::f32);
  auto gpu_pool = gpu->make_pool(256, 16, DType::f32);
  std::vector<KVSequence> cs, gs;
  std::vector<std::vector<int>> tokens;
  int next_block = 0;
  for (const auto& c : golden["cases"]) {
    tokens.push_back(c["tokens"].get<std::vector<int>>());
    cs.emplace_back(*cpu_pool);
    gs.emplace_back(*gpu_pool);
    for (std::size_t b = 0; b < (tokens.back().size() + 15) / 16; ++b) {
      cs.back().append_block(next_block);
      gs.back().append_block(next_block);
      ++next_block;
    }
  }
  REQUIRE(next_block <= 256);
  // Step 1: every sequence's first 9 tokens (prefill chunks); then one token each per step
  // (decodes), as a continuous batch would run them. Compare every step's rows.
  const int V = model.config().vocab_size;
  std::vector<float> a, b;
  for (int start = 0, n = 9;; start += n, n = 1) {
    std::vector<BatchEntry> ce, ge;
    for (std::size_t i = 0; i < tokens.size(); ++i) {
      if (start + n > int(tokens[i].size())) continue;
      const std::span<const int> chunk(tokens[i].data() + start, std::size_t(n));
      ce.push_back({chunk, start, &cs[i]});
      ge.push_back({chunk, start, &gs[i]});
    }
    if (ce.empty()) break;
    cpu->step(ce, LogitsMode::last, a);
    gpu->step(ge, LogitsMode::last, b);
    INFO("step at position " << start);
    REQUIRE(b.size() == a.size());
    CHECK(test::check_close("batched logits", b, a, 2e-3, 1e-3));
    (void)V;
  }
  CHECK(gpu->logits_bytes_copied() > 0);
}

TEST_CASE("CUDA engine: greedy serving on the GPU gives the golden tokens (contiguous and paged)",
          "[gpu][golden][engine]") {
  test::require_gpu();
  const Model model = Model::load(test::model_file("stories260K.bin"));
  const Tokenizer tok = Tokenizer::load(test::model_file("tok512.bin"), 512);
  std::ifstream in(test::golden_file("stories260K_greedy.json"));
  const auto golden = nlohmann::json::parse(in);
  std::vector<Request> reqs;
  for (const auto& c : golden["cases"]) {
    Request r;
    r.id = int(reqs.size());
    r.prompt = c["prompt"].get<std::string>();
    r.max_tokens = c["steps"].get<int>() - int(c["prompt_tokens"].size()) + 1;
    r.sampling.temperature = 0.0f;
    reqs.push_back(r);
  }
  for (Allocator a : {Allocator::contiguous, Allocator::paged}) {
    INFO(allocator_name(a));
    RealEngine e{&model, &tok, DType::f32, Device::cuda};
    e.memory.allocator = a;
    e.memory.budget_bytes = a == Allocator::paged ? (std::size_t(64) << 20) : 0;
    const EngineRun run = run_real(reqs, {Policy::continuous, 4, 16}, e);
    int equal = 0;
    for (std::size_t i = 0; i < reqs.size(); ++i)
      equal += run.requests[i].tokens == golden["cases"][i]["tokens"].get<std::vector<int>>();
    // The GPU's float differences are ~1e-4 on logits of O(10); the golden cases' top-2
    // margins are far larger (the transformer test checks the margins), so all must agree.
    CHECK(equal == int(reqs.size()));
  }
}

TEST_CASE("CUDA runner: greedy tokens chosen on the device equal the CPU runner's",
          "[gpu][golden][runner][greedy]") {
  test::require_gpu();
  const GoldenRunners runners;
  const auto& [model, golden, cpu, gpu] = runners;
  // Each golden prompt prefilled, then 32 greedy steps feeding back each runner's own choice,
  // all sequences in one batch per step (the engine's shape).
  std::vector<KVCache> cc, gc;
  std::vector<std::vector<int>> cseq, gseq;
  for (const auto& c : golden["cases"]) {
    cseq.push_back(c["prompt_tokens"].get<std::vector<int>>());
    gseq.push_back(cseq.back());
    cc.push_back(make_cache(*cpu));
    gc.push_back(make_cache(*gpu));
  }
  const std::size_t copied_before = gpu->logits_bytes_copied();
  std::vector<int> a, b;
  for (int step = 0; step < 32; ++step) {
    std::vector<BatchEntry> ce, ge;
    for (std::size_t i = 0; i < cseq.size(); ++i) {
      const int from = step == 0 ? 0 : int(cseq[i].size()) - 1;
      ce.push_back({std::span<const int>(cseq[i]).subspan(std::size_t(from)), from, &cc[i]});
      ge.push_back({std::span<const int>(gseq[i]).subspan(std::size_t(from)), from, &gc[i]});
    }
    cpu->step_greedy(ce, a);
    gpu->step_greedy(ge, b);
    INFO("step " << step);
    REQUIRE(b == a);
    for (std::size_t i = 0; i < cseq.size(); ++i) {
      cseq[i].push_back(a[i]);
      gseq[i].push_back(b[i]);
    }
  }
  // Only the token ids crossed to the host: 4 bytes per sequence per step.
  CHECK(gpu->logits_bytes_copied() - copied_before == 32 * cseq.size() * sizeof(int));
}
