// Decode allocates nothing after warm-up: every operator new in this executable is counted (the
// replacement below), and a decode step (forward pass of one token, then sampling) must not
// call it. A separate executable, so that the counting new serves these tests alone.
#include <atomic>
#include <cstdlib>
#include <new>
#include <span>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "inferlab/runtime/forward.hpp"
#include "inferlab/runtime/kv_cache.hpp"
#include "inferlab/model/model.hpp"
#include "inferlab/runtime/sampler.hpp"

namespace {
std::atomic<long> g_allocations{0};
}  // namespace

// The replaceable global allocation functions (the array and nothrow forms call these).
void* operator new(std::size_t size) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }

using namespace inferlab;

namespace {

// Allocations made by `steps` decode steps after `warmup` of them, for one model and cache type.
long allocations_per_decode(const Model& model, DType kv_type, int warmup, int steps) {
  const ModelConfig& c = model.config();
  ForwardPass pass(model);
  KVCache cache(c, warmup + steps + 4, kv_type);
  Sampler greedy(SamplingParams{.temperature = 0.0f}, c.vocab_size);
  Sampler sampled(SamplingParams{.temperature = 0.8f}, c.vocab_size);
  std::vector<float> logits;
  std::vector<int> history{1, 5, 9, 2};
  history.reserve(std::size_t(warmup + steps) + 8);
  pass.forward(history, 0, cache, LogitsMode::last, logits);  // prefill: may allocate
  int token = greedy.sample(logits, history);
  long before = 0;
  for (int step = 0; step < warmup + steps; ++step) {
    if (step == warmup) before = g_allocations.load();
    const int pos = cache.length();
    pass.forward(std::span<const int>(&token, 1), pos, cache, LogitsMode::last, logits);
    token = (step % 2 == 0 ? greedy : sampled).sample(logits, history);
    history.push_back(token);  // capacity reserved above
  }
  return g_allocations.load() - before;
}

}  // namespace

TEST_CASE("the counting allocator counts", "[unit][alloc]") {
  const long before = g_allocations.load();
  auto* v = new std::vector<int>(100);
  delete v;
  REQUIRE(g_allocations.load() - before == 2);  // the vector object and its buffer
}

TEST_CASE("decode steps allocate nothing after warm-up (stories260K shape, every cache type)",
          "[unit][alloc][forward]") {
  const Model model = make_synthetic_model("stories260K");
  for (DType type : {DType::f32, DType::f16, DType::int8}) {
    INFO("kv cache " << dtype_name(type));
    REQUIRE(allocations_per_decode(model, type, /*warmup=*/2, /*steps=*/40) == 0);
  }
}

TEST_CASE("decode steps allocate nothing after warm-up (stories15M shape: parallel matmuls)",
          "[unit][alloc][forward]") {
  const Model model = make_synthetic_model("stories15M");
  REQUIRE(allocations_per_decode(model, DType::f32, /*warmup=*/2, /*steps=*/12) == 0);
}

TEST_CASE("sampling with penalties, top-k, min-p and top-p allocates nothing after the first draw",
          "[unit][alloc]") {
  const int vocab = 32000;
  SamplingParams params;
  params.temperature = 0.9f;
  params.top_k = 40;
  params.min_p = 0.01f;
  params.top_p = 0.9f;
  params.repetition_penalty = 1.1f;
  params.frequency_penalty = 0.2f;
  params.presence_penalty = 0.1f;
  Sampler sampler(params, vocab);
  std::vector<float> logits(vocab);
  Rng rng(3);
  for (float& z : logits) z = 4.0f * rng.next_f32();
  std::vector<int> history;
  history.reserve(300);
  for (int i = 0; i < 200; ++i) history.push_back(static_cast<int>(rng.next_u32() % vocab));
  history.push_back(sampler.sample(logits, history));  // the first draw may size the buffers
  const long before = g_allocations.load();
  for (int step = 0; step < 50; ++step) {
    logits[static_cast<std::size_t>(step)] += 1.0f;  // a different distribution each step
    history.push_back(sampler.sample(logits, history));
  }
  CHECK(g_allocations.load() - before == 0);
}
