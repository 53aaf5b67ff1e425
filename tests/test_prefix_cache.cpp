// The prefix caches (chapter 06): the radix trie and the block hashes against brute-force
// oracles, their reference counting and eviction, and the engine with a cache giving the same
// tokens as without one.
#include <algorithm>
#include <climits>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>

#include "inferlab/serving/engine.hpp"
#include "inferlab/base/error.hpp"
#include "inferlab/serving/prefix_cache.hpp"
#include "inferlab/serving/prefix_report.hpp"
#include "inferlab/runtime/sampler.hpp"
#include "inferlab/model/model.hpp"
#include "inferlab/model/tokenizer.hpp"
#include "inferlab/serving/workload.hpp"
#include "model_cases.hpp"
#include "test_support.hpp"

using namespace inferlab;

namespace {

std::uint64_t next(Rng& rng) { return (std::uint64_t(rng.next_u32()) << 32) | rng.next_u32(); }

int lcp(const std::vector<int>& a, const std::vector<int>& b) {
  std::size_t i = 0;
  while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
  return static_cast<int>(i);
}

// A pool whose "keys and values" are fingerprints: slot p of a block holds a hash of the tokens
// 0..p of the sequence that wrote it. A cached block is right for a query exactly when its
// slots below the match length hold the query's fingerprints, which is what attention would
// read. Sequences are stored the way PagedKVManager does it: share the matched blocks, copy the
// partly matched last block before writing into it, take fresh blocks for the rest.
struct FingerprintPool {
  int block_size;
  BlockAllocator alloc;
  std::vector<std::vector<std::uint64_t>> slots;
  FingerprintPool(int blocks, int b)
      : block_size(b),
        alloc(blocks),
        slots(std::size_t(blocks), std::vector<std::uint64_t>(std::size_t(b), 0)) {}

  static std::vector<std::uint64_t> fingerprints(const std::vector<int>& tokens) {
    std::vector<std::uint64_t> f;
    std::uint64_t h = 1469598103934665603ull;
    for (int t : tokens) f.push_back(h = (h ^ std::uint64_t(t + 1)) * 1099511628211ull);
    return f;
  }
  // Stores `tokens` starting from `hit` (matched length, its blocks); returns the block table.
  std::vector<int> store(const std::vector<int>& tokens, const PrefixMatch& hit) {
    std::vector<int> table;
    for (int id : hit.blocks) {
      alloc.retain(id);
      table.push_back(id);
    }
    const auto f = fingerprints(tokens);
    const int len = static_cast<int>(tokens.size());
    for (int p = hit.tokens; p < len; ++p) {
      const int b = p / block_size;
      if (b == static_cast<int>(table.size())) {
        table.push_back(alloc.allocate());
      } else if (alloc.ref_count(table[std::size_t(b)]) > 1) {  // copy-on-write
        const int copy = alloc.allocate();
        slots[std::size_t(copy)] = slots[std::size_t(table[std::size_t(b)])];
        alloc.release(table[std::size_t(b)]);
        table[std::size_t(b)] = copy;
      }
      slots[std::size_t(table[std::size_t(b)])][std::size_t(p % block_size)] = f[std::size_t(p)];
    }
    return table;
  }
  void release(const std::vector<int>& table) {
    for (int id : table) alloc.release(id);
  }
  // True if the match's blocks hold the query's fingerprints at every matched position.
  bool serves(const std::vector<int>& query, const PrefixMatch& hit) const {
    const auto f = fingerprints(query);
    for (int p = 0; p < hit.tokens; ++p) {
      const int id = hit.blocks[std::size_t(p / block_size)];
      if (slots[std::size_t(id)][std::size_t(p % block_size)] != f[std::size_t(p)]) return false;
    }
    return true;
  }
};

// Random prompts over a small alphabet with a few shared stems, so they share prefixes of every
// length (edge splits at arbitrary, non-block-aligned places).
std::vector<int> random_prompt(Rng& rng, const std::vector<std::vector<int>>& stems) {
  std::vector<int> t;
  if (next(rng) % 4 != 0) {
    const auto& stem = stems[next(rng) % stems.size()];
    t.assign(stem.begin(), stem.begin() + long(next(rng) % (stem.size() + 1)));
  }
  const int extra = static_cast<int>(next(rng) % 30);
  for (int i = 0; i < extra; ++i) t.push_back(static_cast<int>(next(rng) % 3));
  if (t.empty()) t.push_back(0);
  return t;
}

}  // namespace

TEST_CASE(
    "radix cache: match lengths equal a brute-force scan, and the blocks hold the query's keys",
    "[prefix][unit]") {
  for (int block_size : {1, 4, 16}) {
    INFO("block size " << block_size);
    FingerprintPool pool(20000, block_size);
    RadixPrefixCache cache(pool.alloc, block_size);
    Rng rng(42 + block_size);
    std::vector<std::vector<int>> stems;
    for (int s = 0; s < 4; ++s) stems.push_back(random_prompt(rng, {{1, 2, 3, 4, 5, 6, 7, 8}}));
    std::vector<std::vector<int>> stored;
    for (int round = 0; round < 300; ++round) {
      const std::vector<int> q = random_prompt(rng, stems);
      const int cap = static_cast<int>(next(rng) % (q.size() + 1));
      int want = 0;
      for (const auto& s : stored) want = std::max(want, std::min(lcp(q, s), cap));
      REQUIRE(cache.peek(q, cap, 0) == want);
      const PrefixMatch hit = cache.match(q, cap, 0);
      REQUIRE(hit.tokens == want);
      REQUIRE(hit.blocks.size() == std::size_t((want + block_size - 1) / block_size));
      REQUIRE(pool.serves(q, hit));
      // Store it as the engine would, then give the table back (the cache keeps its own refs).
      const std::vector<int> table = pool.store(q, hit);
      cache.insert(q, table, 0);
      pool.release(table);
      stored.push_back(q);
    }
    // Every stored prompt is found whole, with the right keys, after all the splits.
    for (const auto& s : stored) {
      const PrefixMatch hit = cache.match(s, INT_MAX, 0);
      CHECK(hit.tokens == static_cast<int>(s.size()));
      CHECK(pool.serves(s, hit));
    }
  }
}

TEST_CASE("hash cache: full blocks only, equal to a brute-force scan over stored blocks",
          "[prefix][unit]") {
  const int B = 4;
  FingerprintPool pool(4096, B);
  HashPrefixCache cache(pool.alloc, B);
  Rng rng(7);
  std::vector<std::vector<int>> stems;
  for (int s = 0; s < 4; ++s) stems.push_back(random_prompt(rng, {{1, 2, 3, 4, 5, 6, 7, 8}}));
  std::vector<std::vector<int>> stored;
  for (int round = 0; round < 300; ++round) {
    const std::vector<int> q = random_prompt(rng, stems);
    const int cap = static_cast<int>(next(rng) % (q.size() + 1));
    int want = 0;  // whole blocks of a common prefix with a stored prompt's full blocks
    for (const auto& s : stored) {
      const int full = static_cast<int>(s.size()) / B * B;
      want = std::max(want, std::min({lcp(q, s), full, cap}) / B * B);
    }
    REQUIRE(cache.peek(q, cap, 0) == want);
    const PrefixMatch hit = cache.match(q, cap, 0);
    REQUIRE(hit.tokens == want);
    REQUIRE(pool.serves(q, hit));
    const std::vector<int> table = pool.store(q, hit);
    cache.insert(q, table, 0);
    pool.release(table);
    stored.push_back(q);
  }
}

TEST_CASE("prefix caches: a tenant's salt hides its entries from everyone else", "[prefix][unit]") {
  for (PrefixCacheKind kind : {PrefixCacheKind::radix, PrefixCacheKind::hash}) {
    INFO(prefix_cache_name(kind));
    FingerprintPool pool(64, 4);
    auto cache = make_prefix_cache(kind, pool.alloc, 4);
    const std::vector<int> q = {1, 5, 9, 2, 6, 5, 3, 5, 8, 9};
    const std::vector<int> table = pool.store(q, {});
    cache->insert(q, table, tenant_salt("alice"));
    pool.release(table);
    // The radix trie matches every token, the hashes two full blocks.
    CHECK(cache->peek(q, 10, tenant_salt("alice")) == (kind == PrefixCacheKind::radix ? 10 : 8));
    CHECK(cache->match(q, 10, tenant_salt("bob")).tokens == 0);
    CHECK(cache->match(q, 10, tenant_salt("")).tokens == 0);
    CHECK(tenant_salt("") == 0);
    CHECK(tenant_salt("alice") != tenant_salt("bob"));
  }
}

TEST_CASE(
    "radix cache: eviction takes least recently used leaves, never pinned ones, and leaks nothing",
    "[prefix][unit]") {
  const int B = 2;
  FingerprintPool pool(64, B);
  {
    RadixPrefixCache cache(pool.alloc, B);
    auto put = [&](const std::vector<int>& q) {
      const PrefixMatch hit = cache.match(q, INT_MAX, 0);
      const std::vector<int> table = pool.store(q, hit);
      cache.insert(q, table, 0);
      pool.release(table);
    };
    const std::vector<int> a = {1, 2, 3, 4, 5, 6}, b = {1, 2, 3, 4, 7, 8}, c = {9, 9, 9, 9};
    put(a);  // oldest
    put(b);  // shares 1 2 3 4 with a: the trie is [1 2 3 4] -> {[5 6], [7 8]}
    put(c);
    CHECK(cache.entries() == 4);
    CHECK(pool.alloc.num_used() == cache.cached_blocks());
    CHECK(cache.evictable_blocks() == pool.alloc.num_used());
    // a is the least recently used leaf: its one block goes first.
    cache.match(c, INT_MAX, 0);  // refresh c
    CHECK(cache.evict(1) == 1);
    CHECK(cache.peek(a, INT_MAX, 0) == 4);
    CHECK(cache.peek(b, INT_MAX, 0) == 6);
    // Pin b (as a running request would): evicting everything leaves b's path alone.
    const PrefixMatch pinned = cache.match(b, INT_MAX, 0);
    cache.lock(pinned.handle);
    CHECK(cache.evictable_blocks() == 2);  // c's two blocks
    CHECK(cache.evict(100) == 2);
    CHECK(cache.peek(b, INT_MAX, 0) == 6);
    CHECK(cache.peek(c, INT_MAX, 0) == 0);
    CHECK(cache.evictable_blocks() == 0);
    cache.unlock(pinned.handle);
    CHECK(cache.evictable_blocks() == 3);
    CHECK_THROWS_AS(cache.unlock(pinned.handle), Error);  // one unlock per lock
    // A block a request still holds is not freed by dropping the entry.
    const PrefixMatch held = cache.match(b, INT_MAX, 0);
    for (int id : held.blocks) pool.alloc.retain(id);
    CHECK(cache.evictable_blocks() == 0);
    for (int id : held.blocks) pool.alloc.release(id);
  }
  CHECK(pool.alloc.num_free() == pool.alloc.num_blocks());  // the cache gave every reference back
}

TEST_CASE("hash cache: eviction frees unused blocks, oldest first and the tail of a chain first",
          "[prefix][unit]") {
  const int B = 2;
  FingerprintPool pool(64, B);
  {
    HashPrefixCache cache(pool.alloc, B);
    const std::vector<int> a = {1, 2, 3, 4, 5, 6}, c = {9, 9, 9, 9};
    for (const auto& q : {a, c}) {
      const std::vector<int> table = pool.store(q, cache.match(q, INT_MAX, 0));
      cache.insert(q, table, 0);
      pool.release(table);
    }
    CHECK(cache.entries() == 5);
    CHECK(cache.evict(1) == 1);  // a's last block: the oldest chain loses its tail
    CHECK(cache.peek(a, INT_MAX, 0) == 4);
    CHECK(cache.peek(c, INT_MAX, 0) == 4);
    const PrefixMatch used = cache.match(c, INT_MAX, 0);
    for (int id : used.blocks) pool.alloc.retain(id);  // a running request holds c's blocks
    CHECK(cache.evictable_blocks() == 2);
    CHECK(cache.evict(10) == 2);
    CHECK(cache.peek(c, INT_MAX, 0) == 4);
    for (int id : used.blocks) pool.alloc.release(id);
  }
  CHECK(pool.alloc.num_free() == pool.alloc.num_blocks());
}

TEST_CASE("prefix caches: errors", "[prefix][unit]") {
  BlockAllocator alloc(8);
  CHECK_THROWS_WITH(parse_prefix_cache("lru"), Catch::Contains("radix, hash or off"));
  RadixPrefixCache radix(alloc, 4);
  const std::vector<int> t = {1, 2, 3, 4, 5};
  const std::vector<int> one = {0};
  CHECK_THROWS_WITH(radix.insert(t, one, 0), Catch::Contains("5 tokens live in 2 blocks"));
  CHECK_THROWS_AS(RadixPrefixCache(alloc, 0), Error);
  CHECK(make_prefix_cache(PrefixCacheKind::off, alloc, 4) == nullptr);
}

namespace {
// Requests whose prompts share prefixes of several lengths: a long one (a "system prompt"), a
// shorter one, and none; some arrive after others finished so they hit the cache.
std::vector<Request> shared_prefix_requests(int vocab) {
  Rng rng(3);
  auto ids = [&](int n) {
    std::vector<int> v;
    for (int i = 0; i < n; ++i)
      v.push_back(3 + static_cast<int>(next(rng) % std::uint64_t(vocab - 3)));
    return v;
  };
  const std::vector<int> system = ids(37), other = ids(21);
  std::vector<Request> out;
  for (int i = 0; i < 10; ++i) {
    Request r;
    r.id = i;
    r.arrival = 0.0;
    r.prompt_ids = i % 3 == 2 ? ids(12) : (i % 3 == 0 ? system : other);
    const auto tail = ids(3 + i);
    r.prompt_ids.insert(r.prompt_ids.end(), tail.begin(), tail.end());
    r.max_tokens = 12 + i;
    r.ignore_eos = true;
    r.sampling.temperature = 0.0f;
    out.push_back(r);
  }
  return out;
}

// Llama-3-8B on an H100, simulated, with paged KV memory of `blocks` blocks of 16 positions.
SimEngine paged_h100(std::size_t blocks) {
  SimEngine e;
  e.config = named_config("llama3-8b");
  e.hardware = hardware_by_name("h100-sxm");
  e.cost = cost_options_for(e.hardware);
  e.memory.allocator = Allocator::paged;
  e.memory.block_size = 16;
  e.memory.budget_bytes = kv_storage_bytes_per_token(e.config, DType::f32) * 16 * blocks;
  return e;
}

// 120 short requests of one workload kind at 20 requests/s.
WorkloadSpec short_requests(WorkloadKind kind) {
  WorkloadSpec spec;
  spec.kind = kind;
  spec.requests = 120;
  spec.rate = 20.0;
  spec.prompt = parse_length_distribution("lognormal:48:0.5");
  spec.output = parse_length_distribution("lognormal:32:0.5");
  spec.max_prompt = 96;
  spec.max_output = 64;
  return spec;
}
}  // namespace

TEST_CASE("engine: with a prefix cache every request's greedy tokens equal those without one",
          "[prefix][engine]") {
  const Model model = make_synthetic_model("stories260K");
  const Tokenizer tok = Tokenizer::synthetic(model.config().vocab_size);
  const std::vector<Request> reqs = shared_prefix_requests(model.config().vocab_size);
  const std::size_t per_token = kv_storage_bytes_per_token(model.config(), DType::f32);
  RealEngine e{&model, &tok, DType::f32, Device::cpu, {}};
  e.memory.allocator = Allocator::paged;
  e.memory.block_size = 8;
  e.memory.budget_bytes = per_token * 8 * 200;
  // max_seqs 2: later requests arrive at a warm cache.
  const SchedulerConfig sc{Policy::continuous, 2, 64};
  const EngineRun off = run_real(reqs, sc, e);
  for (PrefixCacheKind kind : {PrefixCacheKind::radix, PrefixCacheKind::hash}) {
    INFO(prefix_cache_name(kind));
    e.memory.prefix_cache = kind;
    const EngineRun on = run_real(reqs, sc, e);
    CHECK(on.prefix_cache == prefix_cache_name(kind));
    long saved = 0, computed_off = 0, computed_on = 0;
    for (std::size_t i = 0; i < reqs.size(); ++i) {
      INFO("request " << i);
      CHECK(on.requests[i].tokens == off.requests[i].tokens);
      saved += on.requests[i].cached_tokens;
    }
    for (const EngineStep& s : off.steps) computed_off += s.prefill_tokens;
    for (const EngineStep& s : on.steps) computed_on += s.prefill_tokens;
    CHECK(saved > 100);
    CHECK(computed_on == computed_off - saved);  // every cached token is one not prefilled
    // Token-granular vs block-granular: request 3 shares 38 tokens (BOS + 37) with request 0.
    if (kind == PrefixCacheKind::radix) CHECK(on.requests[3].cached_tokens == 38);
    if (kind == PrefixCacheKind::hash) CHECK(on.requests[3].cached_tokens == 32);
  }
}

TEST_CASE("engine: the model's greedy text is the same with and without the cache",
          "[prefix][engine][invariant]") {
  const test::ModelCases mc = test::model_cases();  // stories260K, else its synthetic stand-in
  const Model& model = mc.model;
  const Tokenizer& tok = mc.tokenizer;
  // Golden-style prompts sharing a prefix of different lengths.
  std::vector<Request> reqs;
  const char* prompts[] = {"Once upon a time, there was a little girl named Lily.",
                           "Once upon a time, there was a little girl named Lily. She loved",
                           "Once upon a time, there was a little boy",
                           "Once upon a time, there was a little girl named Lily. One day"};
  for (int i = 0; i < 4; ++i) {
    Request r;
    r.id = i;
    r.arrival = 0.0;
    r.prompt = prompts[i];
    r.max_tokens = 40;
    r.sampling.temperature = 0.0f;
    reqs.push_back(r);
  }
  RealEngine e{&model, &tok, DType::f32, Device::cpu, {}};
  e.memory.allocator = Allocator::paged;
  e.memory.block_size = 4;
  e.memory.budget_bytes = kv_storage_bytes_per_token(model.config(), DType::f32) * 4 * 128;
  const SchedulerConfig one_at_a_time{Policy::continuous, 1, 64};
  const EngineRun off = run_real(reqs, one_at_a_time, e);
  e.memory.prefix_cache = PrefixCacheKind::radix;
  const EngineRun on = run_real(reqs, one_at_a_time, e);
  for (std::size_t i = 0; i < reqs.size(); ++i) {
    INFO("request " << i);
    CHECK(on.requests[i].text == off.requests[i].text);
    CHECK(on.requests[i].tokens == off.requests[i].tokens);
  }
  // Request 1 runs after request 0 finished: it reuses all of request 0's prompt and answer
  // that it shares (at least the prompt), the last prompt token excepted.
  CHECK(on.requests[1].cached_tokens >= static_cast<int>(off.requests[0].prompt_tokens.size()));
  CHECK(on.requests[2].cached_tokens > 0);
}

TEST_CASE("engine: a chat's next turn reuses the whole conversation", "[prefix][engine]") {
  const Model model = make_synthetic_model("stories260K");
  const Tokenizer tok = Tokenizer::synthetic(model.config().vocab_size);
  std::vector<Request> reqs(3);
  for (int i = 0; i < 3; ++i) {
    reqs[i].id = i;
    reqs[i].prompt_ids = {10 + i, 20 + i, 30 + i, 40 + i, 50 + i};
    reqs[i].max_tokens = 9;
    reqs[i].ignore_eos = true;
    reqs[i].sampling.temperature = 0.0f;
    reqs[i].parent = i - 1;
    reqs[i].think_time = 0.5;
  }
  RealEngine e{&model, &tok, DType::f32, Device::cpu, {}};
  e.memory.allocator = Allocator::paged;
  e.memory.block_size = 4;
  e.memory.budget_bytes = kv_storage_bytes_per_token(model.config(), DType::f32) * 4 * 64;
  const EngineRun off = run_real(reqs, {}, e);
  e.memory.prefix_cache = PrefixCacheKind::radix;
  const EngineRun on = run_real(reqs, {}, e);
  for (int i = 0; i < 3; ++i) {
    INFO("turn " << i);
    CHECK(on.requests[i].tokens == off.requests[i].tokens);
    if (i == 0) continue;
    // The turn's prompt is the previous turn's tokens, then its own message.
    const auto& prev = off.requests[i - 1].tokens;
    const auto& prompt = off.requests[i].prompt_tokens;
    REQUIRE(prompt.size() == prev.size() + 5);
    CHECK(std::equal(prev.begin(), prev.end(), prompt.begin()));
    // Everything the previous turn forwarded is cached: all its tokens but the last generated.
    CHECK(on.requests[i].cached_tokens == static_cast<int>(prev.size()) - 1);
    CHECK(off.requests[i].timeline.arrival >=
          off.requests[i - 1].timeline.token_times.back() + 0.5);
  }
}

TEST_CASE("engine: under memory pressure the cache evicts, and tokens do not change",
          "[prefix][engine]") {
  const Model model = make_synthetic_model("stories260K");
  const Tokenizer tok = Tokenizer::synthetic(model.config().vocab_size);
  WorkloadSpec spec;
  spec.requests = 24;
  spec.prompt = parse_length_distribution("uniform:20:60");
  spec.output = parse_length_distribution("uniform:5:20");
  spec.sampling.temperature = 0.0f;
  const auto reqs = generate_workload(spec);
  RealEngine e{&model, &tok, DType::f32, Device::cpu, {}};
  e.memory.allocator = Allocator::paged;
  e.memory.block_size = 4;
  e.memory.budget_bytes = kv_storage_bytes_per_token(model.config(), DType::f32) * 4 * 60;
  const SchedulerConfig sc{Policy::continuous, 3, 64};
  const EngineRun off = run_real(reqs, sc, e);
  for (PrefixCacheKind kind : {PrefixCacheKind::radix, PrefixCacheKind::hash}) {
    INFO(prefix_cache_name(kind));
    e.memory.prefix_cache = kind;
    const EngineRun on = run_real(reqs, sc, e);
    CHECK(on.evicted_blocks > 0);
    CHECK(on.peak_cached_blocks <= 60);
    for (std::size_t i = 0; i < reqs.size(); ++i)
      CHECK(on.requests[i].tokens == off.requests[i].tokens);
    for (const EngineStep& s : on.steps) CHECK(s.kv_reserved <= 60u * 4);
  }
}

TEST_CASE("scheduler: longest-prefix order keeps a small cache hitting where FCFS thrashes",
          "[prefix][engine]") {
  // Two prefixes, alternating in arrival order; one request runs at a time and the pool holds
  // one prefix besides the running request. FCFS alternates A B A B and evicts each prefix
  // before its next use; longest-prefix runs the As together, then the Bs.
  SimEngine e;
  e.config = named_config("llama3-8b");
  e.hardware = hardware_by_name("h100-sxm");
  const int B = 16;
  const std::size_t per_token = kv_storage_bytes_per_token(e.config, DType::f32);
  e.memory.allocator = Allocator::paged;
  e.memory.block_size = B;
  e.memory.prefix_cache = PrefixCacheKind::radix;
  e.memory.budget_bytes = per_token * B * 14;  // 14 blocks: a request takes 9
  std::vector<Request> reqs;
  for (int i = 0; i < 12; ++i) {
    Request r;
    r.id = i;
    r.prompt_ids.assign(127, i % 2 == 0 ? 7 : 8);  // with BOS: 8 full blocks
    r.prompt_ids.push_back(100 + i);
    r.max_tokens = 4;
    r.ignore_eos = true;
    reqs.push_back(r);
  }
  std::map<Order, double> hit_rate;
  for (Order order : {Order::fcfs, Order::longest_prefix}) {
    SchedulerConfig sc{Policy::continuous, 1, 4096};
    sc.order = order;
    const EngineRun run = run_sim(reqs, sc, e);
    long cached = 0, prompt = 0;
    for (const RequestResult& r : run.requests) {
      cached += r.cached_tokens;
      prompt += long(r.prompt_tokens.size());
    }
    hit_rate[order] = double(cached) / double(prompt);
  }
  CHECK(hit_rate[Order::fcfs] < 0.1);
  CHECK(hit_rate[Order::longest_prefix] > 0.7);
}

TEST_CASE("prefix cache: needs paged memory", "[prefix][engine]") {
  const Model model = make_synthetic_model("stories260K");
  const Tokenizer tok = Tokenizer::synthetic(model.config().vocab_size);
  RealEngine e{&model, &tok, DType::f32, Device::cpu, {}};
  e.memory.prefix_cache = PrefixCacheKind::radix;
  Request r;
  r.prompt_len = 10;
  CHECK_THROWS_WITH(run_real({r}, {}, e), Catch::Contains("needs paged KV memory"));
}

TEST_CASE(
    "engine: every shared-prefix workload saves prefill, the trie at least as much as the hashes",
    "[prefix][engine]") {
  SimEngine e = paged_h100(2048);
  for (WorkloadKind kind : {WorkloadKind::shared_prefix, WorkloadKind::few_shot,
                            WorkloadKind::multi_turn, WorkloadKind::rag}) {
    INFO(workload_kind_name(kind));
    const std::vector<Request> reqs = generate_workload(short_requests(kind));
    std::map<std::string, PrefixSummary> s;
    std::vector<int> tokens_off;
    for (PrefixCacheKind cache :
         {PrefixCacheKind::off, PrefixCacheKind::hash, PrefixCacheKind::radix}) {
      e.memory.prefix_cache = cache;
      const EngineRun run = run_sim(reqs, {Policy::continuous, 16, 512}, e);
      const PrefixSummary sum = prefix_summary(run);
      s[sum.cache] = sum;
      // Nothing is preempted here, so every prompt token is either prefilled once or served.
      CHECK(sum.preemptions == 0);
      CHECK(sum.prefill_tokens_computed + sum.prefill_tokens_saved == sum.prompt_tokens);
    }
    CHECK(s["off"].prefill_tokens_saved == 0);
    CHECK(s["hash"].token_hit_rate > 0.1);
    CHECK(s["radix"].prefill_tokens_saved >= s["hash"].prefill_tokens_saved);
    CHECK(s["radix"].prefill_tokens_computed < s["off"].prefill_tokens_computed);
  }
}

TEST_CASE("side channel: without a tenant salt a seen prefix answers faster, with one it does not",
          "[prefix][engine]") {
  SimEngine e = paged_h100(1024);
  e.memory.prefix_cache = PrefixCacheKind::radix;
  auto serve = [&](const std::vector<Request>& reqs) { return run_sim(reqs, {}, e); };
  const SideChannel open = measure_side_channel(serve, 2000, 1.0, /*salted=*/false);
  const SideChannel closed = measure_side_channel(serve, 2000, 1.0, /*salted=*/true);
  CHECK(open.ratio() > 3.0);                           // a 2,000-token prefill skipped
  CHECK(closed.ratio() == Approx(1.0).epsilon(0.02));  // both of bob's prompts prefilled whole
  CHECK_THROWS_AS(measure_side_channel(serve, 0, 1.0, false), Error);
}

TEST_CASE("the worked example: a 2,000-token prefill of Llama-3-70B on 4x A100",
          "[prefix][unit]") {
  const PrefillSaving seed = worked_example_prefill_saving();
  // The same roofline by hand: one A100 with 4x its FLOP/s, bandwidth and memory.
  Hardware four = hardware_by_name("a100-sxm");
  four.peak_flops *= 4;
  four.bandwidth *= 4;
  four.memory_bytes *= 4;
  const PrefillSaving hand =
      prefill_saving(named_config("llama3-70b"), four, cost_options_for(four), 2000, 100.0);
  CHECK(seed.prefill_seconds == hand.prefill_seconds);
  CHECK(seed.rate == 100.0);
  // The prefill keeps all four GPUs busy: GPU-seconds are its wall time times 4.
  CHECK(seed.gpus == 4);
  CHECK(seed.gpu_seconds_saved_per_second == Approx(seed.prefill_seconds * 4 * 100.0));
  // A few hundred ms per request.
  CHECK(seed.prefill_seconds > 0.1);
  CHECK(seed.prefill_seconds < 1.0);
}

TEST_CASE("the prefix study: every cache on one workload, the radix cache in both orders, and the "
          "side channel",
          "[prefix][engine]") {
  const SimEngine e = paged_h100(1024);
  PrefixStudyPlan plan;
  plan.requests = generate_workload(short_requests(WorkloadKind::shared_prefix));
  plan.caches = {PrefixCacheKind::off, PrefixCacheKind::hash, PrefixCacheKind::radix};
  plan.order = Order::fcfs;
  plan.simulated = true;
  plan.context = e.config.seq_len;
  std::vector<std::string> said;
  plan.progress = [&](const std::string& line) { said.push_back(line); };
  std::vector<std::pair<PrefixCacheKind, Order>> served;
  const PrefixServe serve = [&](const std::vector<Request>& reqs, PrefixCacheKind cache,
                                Order order) {
    served.emplace_back(cache, order);
    SimEngine with = e;
    with.memory.prefix_cache = cache;
    SchedulerConfig sc{Policy::continuous, 16, 512};
    sc.order = order;
    return run_sim(reqs, sc, with);
  };
  const PrefixStudy s = run_prefix_study(plan, serve);
  REQUIRE(s.runs.size() == 3);
  REQUIRE(s.summaries.size() == 3);
  CHECK(s.summaries[0].cache == "off");
  CHECK(s.summaries[1].cache == "hash");
  CHECK(s.summaries[2].cache == "radix");
  CHECK(s.summaries[0].prefill_tokens_saved == 0);
  CHECK(s.summaries[2].prefill_tokens_saved > 0);
  CHECK(s.same_tokens);
  CHECK(s.other == Order::longest_prefix);
  REQUIRE(s.other_order);
  CHECK(s.other_order->cache == "radix");
  // Three caches, the radix cache in the other order, then the side channel's two probes.
  REQUIRE(served.size() == 6);
  CHECK(served[3] == std::pair(PrefixCacheKind::radix, Order::longest_prefix));
  CHECK(served[4] == std::pair(PrefixCacheKind::radix, Order::fcfs));
  CHECK(said.front() == "serving with prefix cache off");
  CHECK(said.back() == "side channel probe");
  CHECK(s.probe_tokens == 2000);
  CHECK(s.open.ratio() > 3.0);
  CHECK(s.closed.ratio() == Approx(1.0).epsilon(0.02));
  CHECK(s.worked_example.prefill_seconds == worked_example_prefill_saving().prefill_seconds);

  // Without the radix cache there is no second order to compare; a short context bounds the
  // probe's prefix.
  plan.caches = {PrefixCacheKind::hash};
  plan.context = 300;
  const PrefixStudy h = run_prefix_study(plan, serve);
  CHECK_FALSE(h.other_order);
  CHECK(h.probe_tokens == 284);
}

TEST_CASE("engine: a conversation growing one turn at a time fits under every cache",
          "[prefix][engine]") {
  // 1,000 turns of one token and one generated token: the conversation ends at 2,001 tokens,
  // 126 blocks of 16, in a pool of 256. Each turn matches the whole conversation so far, which
  // ends inside a block, and copies that block on write; the radix trie must not keep the
  // superseded copy pinned along the path (one block per turn would fill the pool by turn 256).
  std::vector<Request> reqs(1000);
  for (int i = 0; i < 1000; ++i) {
    reqs[i].id = i;
    reqs[i].prompt_ids = {5};
    reqs[i].max_tokens = 1;
    reqs[i].parent = i - 1;
  }
  SimEngine e = paged_h100(256);
  for (PrefixCacheKind cache :
       {PrefixCacheKind::off, PrefixCacheKind::hash, PrefixCacheKind::radix}) {
    INFO("cache " << prefix_cache_name(cache));
    e.memory.prefix_cache = cache;
    const EngineRun run = run_sim(reqs, {}, e);
    REQUIRE(run.requests.size() == 1000);
    CHECK(run.requests.back().prompt_tokens.size() == 2000);
    if (cache == PrefixCacheKind::radix) CHECK(run.requests.back().cached_tokens == 1998);
  }
  // Longer than the pool: refused before the run, naming the turn and the conversation.
  reqs.resize(3000);
  for (int i = 1000; i < 3000; ++i) {
    reqs[i].id = i;
    reqs[i].prompt_ids = {5};
    reqs[i].max_tokens = 1;
    reqs[i].parent = i - 1;
  }
  e.memory.prefix_cache = PrefixCacheKind::radix;
  CHECK_THROWS_WITH(run_sim(reqs, {}, e),
                    Catch::Contains("request 2047 (continuing request 2046: a conversation of "
                                    "up to 4096 tokens)") &&
                        Catch::Contains("the pool has 256"));
  CHECK_THROWS_WITH(check_workload_fits(reqs, e.memory, e.config, DType::f32, nullptr),
                    Catch::Contains("request 2047"));
}
