// PagedAttention (chapter 05): the paged cache gives the contiguous cache's bits, the block
// manager keeps its invariants (reference counts, copy-on-write, fork, swap), and under memory
// pressure the engine preempts without losing or changing a single token.
#include <algorithm>
#include <cstring>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <type_traits>

#include <nlohmann/json.hpp>

#include "inferlab/serving/engine.hpp"
#include "inferlab/base/units.hpp"
#include "inferlab/base/error.hpp"
#include "inferlab/kernels/kv_quant.hpp"
#include "inferlab/kernels/attention.hpp"
#include "inferlab/serving/kv_manager.hpp"
#include "inferlab/serving/paging.hpp"
#include "inferlab/runtime/paged_sequence.hpp"
#include "inferlab/runtime/runner.hpp"
#include "inferlab/runtime/sampler.hpp"
#include "inferlab/serving/workload.hpp"
#include "test_support.hpp"

using namespace inferlab;

namespace {

// The golden prompts' token ids when the real model is here; otherwise made-up prompts on the
// synthetic model of the same shape (the property tested does not depend on the weights).
struct Case {
  Model model;
  std::vector<std::vector<int>> prompts;
};

Case load_case() {
  const auto path = test::models_dir() / "stories260K.bin";
  const auto golden = test::golden_dir() / "stories260K_greedy.json";
  if (std::filesystem::exists(path) && std::filesystem::exists(golden)) {
    Case c{Model::load(path.string()), {}};
    std::ifstream in(golden);
    // Named: a range-for over a member of the temporary parse() result would read freed memory.
    const nlohmann::json doc = nlohmann::json::parse(in);
    for (const auto& g : doc["cases"])
      c.prompts.push_back(g["tokens"].get<std::vector<int>>());  // prompt + greedy output
    return c;
  }
  if (test::models_required()) FAIL("stories260K.bin or its golden file is missing");
  Case c{make_synthetic_model("stories260K"), {}};
  for (int i = 0; i < 4; ++i) c.prompts.push_back(synthetic_prompt(i, 40 + 23 * i, 512));
  return c;
}

}  // namespace

TEST_CASE("paged attention: the paged forward gives the contiguous cache's bits",
          "[paged][golden]") {
  const Case c = load_case();
  const std::unique_ptr<ModelRunner> runner = make_runner(c.model, Device::cpu);
  for (DType type : {DType::f32, DType::f16, DType::int8}) {
    for (int block_size : {1, 16, 7}) {  // 7 divides none of the prompt lengths used
      INFO("kv " << dtype_name(type) << " block size " << block_size);
      // Enough blocks for the longest sequence and the three-block spacer below (the golden
      // sequences are up to the model's 512 positions: 256 blocks of 1 would not hold them).
      std::size_t longest = 0;
      for (const std::vector<int>& t : c.prompts) longest = std::max(longest, t.size());
      const int num_blocks = std::max(256, int((longest + block_size - 1) / block_size) + 3);
      PagedKVManager paged(runner_pools(*runner, type), num_blocks, block_size);
      for (const std::vector<int>& tokens : c.prompts) {
        const int n = static_cast<int>(tokens.size());
        // Contiguous: the whole sequence in one call, every row of logits.
        KVCache cache = make_cache(*runner, n, type);
        std::vector<float> want, got, row;
        run_sequence(*runner, tokens, 0, cache, LogitsMode::all, want);
        // Paged: a prompt chunk, then one token at a time, through a scrambled block table
        // (physical blocks taken out of order, so logical != physical).
        Sequence seq;
        seq.tokens = tokens;
        seq.request.id = 1;
        // Scramble the free list: take three blocks and give back the middle one first.
        Sequence spacer;
        spacer.tokens.assign(std::size_t(3 * block_size), 5);
        paged.allocate(spacer);
        paged.allocate(seq);  // blocks for the whole sequence, not 0, 1, 2, ...
        paged.free(spacer);
        const int first = std::min(n, 9);
        run_sequence(*runner, std::span<const int>(tokens.data(), first), 0, *seq.kv,
                     LogitsMode::all, got);
        for (int p = first; p < n; ++p) {
          run_sequence(*runner, std::span<const int>(&tokens[p], 1), p, *seq.kv, LogitsMode::all,
                       row);
          got.insert(got.end(), row.begin(), row.end());
        }
        REQUIRE(got.size() == want.size());
        CHECK(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)) == 0);
        if (block_size > 1)
          CHECK(seq.kv->blocks().size() == std::size_t((n + block_size - 1) / block_size));
        paged.free(seq);
        CHECK(paged.allocator().num_free() == num_blocks);
      }
    }
  }
}

TEST_CASE("paged attention kernel: the reference twin equals attention over gathered rows",
          "[paged][kernel]") {
  // Two sequences of 21 and 5 positions in a pool of 8 blocks of 4, tables out of order.
  const int Nh = 4, Nkv = 2, hs = 8, B = 4, KV = Nkv * hs;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> kpool(8 * B * KV), vpool(kpool.size());
  for (float& x : kpool) x = u(rng);
  for (float& x : vpool) x = u(rng);
  const std::vector<int> tables = {5, 0, 7, 2, 6, /* seq 1: */ 3, 1};
  const std::vector<int> offsets = {0, 5};
  const std::vector<int> token_seq = {0, 0, 1}, pos = {19, 20, 4};
  std::vector<float> q(3 * Nh * hs);
  for (float& x : q) x = u(rng);
  std::vector<float> out(q.size());
  kernels::paged_attention_ref(out.data(), q.data(), kpool.data(), vpool.data(), tables.data(),
                               offsets.data(), token_seq.data(), pos.data(), 3, Nh, Nkv, hs, B);
  // Independent check: attention_kv_cpu through a KVRowsView with the same table.
  for (int t = 0; t < 3; ++t) {
    kernels::KVRowsView k{DType::f32, kpool.data(), nullptr, tables.data() + offsets[token_seq[t]],
                          B};
    kernels::KVRowsView v = k;
    v.data = vpool.data();
    std::vector<float> want(Nh * hs);
    kernels::attention_kv_cpu(want.data(), &q[t * Nh * hs], k, v, &pos[t], 1, Nh, Nkv, hs);
    const auto r = test::all_close(&out[t * Nh * hs], want, Nh * hs, 1e-6, 1e-5);
    INFO("token " << t << " max error " << r.max_abs_err);
    CHECK(r.ok);
  }
}

TEST_CASE("block manager: reference counts, copy-on-write and fork on random operations",
          "[paged][unit]") {
  const ModelConfig config = named_config("stories260K");
  const int B = 4, blocks = 24;
  PagedKVManager kv(virtual_pools(config, DType::f32), blocks, B);
  std::mt19937 rng(11);
  std::vector<std::unique_ptr<Sequence>> live;
  int next_id = 0;
  for (int op = 0; op < 3000; ++op) {
    const int what = int(rng() % 4);
    if (what == 0) {  // admit a new sequence
      auto s = std::make_unique<Sequence>();
      s->request.id = next_id++;
      s->tokens.assign(1 + rng() % 10, 5);
      if (!kv.can_allocate(*s)) continue;
      kv.allocate(*s);
      s->computed = 0;
      live.push_back(std::move(s));
    } else if (what == 1 && !live.empty()) {  // append tokens (decode or prompt chunk)
      Sequence& s = *live[rng() % live.size()];
      const int n = 1 + int(rng() % 3);
      if (!kv.can_append(s, n)) continue;
      const std::vector<int> before = s.kv->blocks();
      kv.append(s, n);
      // Every block this append writes into is now private to s.
      for (int p = s.computed; p < s.computed + n; ++p)
        CHECK(kv.allocator().ref_count(s.kv->blocks()[std::size_t(p / B)]) == 1);
      s.computed += n;
      s.kv->set_length(s.computed);
      if (s.computed > int(s.tokens.size())) s.tokens.resize(std::size_t(s.computed), 5);
    } else if (what == 2 && !live.empty()) {  // fork
      Sequence& parent = *live[rng() % live.size()];
      auto child = std::make_unique<Sequence>();
      child->request.id = next_id++;
      child->tokens = parent.tokens;
      child->computed = parent.computed;
      kv.fork(parent, *child);
      // The child shares the blocks that hold the parent's positions, no more.
      const auto& pb = parent.kv->blocks();
      const std::size_t shared = std::size_t((parent.kv->length() + B - 1) / B);
      CHECK(child->kv->blocks() ==
            std::vector<int>(pb.begin(), pb.begin() + std::ptrdiff_t(shared)));
      live.push_back(std::move(child));
    } else if (what == 3 && !live.empty()) {  // finish one
      const std::size_t i = rng() % live.size();
      kv.free(*live[i]);
      live.erase(live.begin() + std::ptrdiff_t(i));
    }
    // Invariant: each block's count is the number of tables holding it; free = count 0.
    std::map<int, int> holders;
    for (const auto& s : live)
      for (int id : s->kv->blocks()) ++holders[id];
    int used = 0;
    for (int id = 0; id < blocks; ++id) {
      CHECK(kv.allocator().ref_count(id) == holders[id]);
      used += holders[id] > 0;
    }
    CHECK(kv.allocator().num_free() == blocks - used);
  }
  for (auto& s : live) kv.free(*s);
  CHECK(kv.allocator().num_free() == blocks);
}

TEST_CASE("paged sequence: growth, copy-on-write, truncation, fork and release of a block table",
          "[paged][unit]") {
  static_assert(ceil_div(0, 4) == 0 && ceil_div(1, 4) == 1 && ceil_div(4, 4) == 1 &&
                ceil_div(5, 4) == 2);
  static_assert(std::is_same_v<decltype(ceil_div(5L, 4)), long>);
  const Model model = make_synthetic_model("stories260K");
  HostKVPool pool(model.config(), 8, 4, DType::f32);
  BlockAllocator alloc(8);
  KVSequence a(pool);
  CHECK(paged::blocks_to_write(a, alloc, 0, 10) == 3);  // ceil(10 / 4) new blocks
  paged::prepare_write(a, alloc, 0, 10);
  a.set_length(10);
  REQUIRE(a.blocks().size() == 3);
  CHECK(alloc.num_used() == 3);
  CHECK(paged::blocks_to_write(a, alloc, 10, 10) == 0);  // nothing to write: nothing needed

  // A fork of 6 positions shares the 2 blocks that hold them; nothing is copied.
  KVSequence b(pool);
  paged::fork(a, b, alloc, 6);
  CHECK(b.length() == 6);
  CHECK(b.blocks() == std::vector<int>(a.blocks().begin(), a.blocks().begin() + 2));
  CHECK(alloc.ref_count(a.blocks()[1]) == 2);
  CHECK(alloc.num_used() == 3);

  // b writes positions 6..8: block 1 is shared (one copy), block 2 is new.
  const int shared = a.blocks()[1];
  std::vector<std::uint8_t> bytes(pool.bytes_per_block());
  for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = std::uint8_t(i * 7 + 1);
  pool.write_block(shared, bytes);
  CHECK(paged::blocks_to_write(b, alloc, 6, 9) == 2);
  paged::prepare_write(b, alloc, 6, 9);
  CHECK(b.length() == 6);  // the valid length is the forward pass's to move
  CHECK(b.blocks()[0] == a.blocks()[0]);
  CHECK(b.blocks()[1] != shared);
  CHECK(alloc.ref_count(shared) == 1);
  CHECK(alloc.num_used() == 5);
  std::vector<std::uint8_t> copied(pool.bytes_per_block());
  pool.read_block(b.blocks()[1], copied);
  CHECK(copied == bytes);

  // a keeps 4 positions: its last two blocks go back; block 0 only loses a's reference.
  paged::truncate(a, alloc, 4);
  CHECK(a.length() == 4);
  CHECK(a.blocks().size() == 1);
  CHECK(alloc.num_used() == 3);
  CHECK(alloc.ref_count(a.blocks()[0]) == 2);
  paged::release(a, alloc);
  CHECK(a.blocks().empty());
  CHECK(alloc.ref_count(b.blocks()[0]) == 1);
  paged::release(b, alloc);
  CHECK(alloc.num_used() == 0);
}

TEST_CASE("block manager: copy-on-write keeps a forked sequence's own tokens", "[paged][unit]") {
  // Real storage: after a fork, each branch writes a different token into the shared last
  // block; each must read back its own, and the shared prefix must be stored once.
  const Model model = make_synthetic_model("stories260K");
  const std::unique_ptr<ModelRunner> runner = make_runner(model, Device::cpu);
  PagedKVManager kv(runner_pools(*runner, DType::f32), 16, 4);
  Sequence a;
  a.tokens = {1, 50, 60, 70, 80, 90};  // 6 positions: the second block is half full
  kv.allocate(a);
  std::vector<float> logits;
  kv.append(a, 6);
  run_sequence(*runner, a.tokens, 0, *a.kv, LogitsMode::last, logits);
  a.computed = 6;
  Sequence b;
  b.tokens = a.tokens;
  b.computed = 6;
  kv.fork(a, b);
  CHECK(kv.allocator().num_used() == 2);  // shared
  std::vector<float> la, lb, ra, rb;
  kv.append(a, 1);  // copy-on-write of block 1 for a
  a.tokens.push_back(100);
  run_sequence(*runner, std::span<const int>(&a.tokens[6], 1), 6, *a.kv, LogitsMode::last, la);
  kv.append(b, 1);  // b is now the only holder of the old block: no copy
  b.tokens.push_back(200);
  run_sequence(*runner, std::span<const int>(&b.tokens[6], 1), 6, *b.kv, LogitsMode::last, lb);
  CHECK(kv.allocator().num_used() == 3);
  CHECK(a.kv->blocks()[0] == b.kv->blocks()[0]);  // the full first block stays shared
  CHECK(a.kv->blocks()[1] != b.kv->blocks()[1]);
  // Each equals the same sequence run alone in a contiguous cache.
  for (const auto& [seq, got] : {std::pair{&a, &la}, std::pair{&b, &lb}}) {
    KVCache cache = make_cache(*runner, 7);
    std::vector<float> want;
    run_sequence(*runner, seq->tokens, 0, cache, LogitsMode::last, want);
    CHECK(std::memcmp(want.data(), got->data(), want.size() * sizeof(float)) == 0);
  }
}

TEST_CASE("preemption: under memory pressure every request completes with its solo tokens",
          "[paged][engine]") {
  const Model model = make_synthetic_model("stories260K");
  const Tokenizer tok = Tokenizer::synthetic(model.config().vocab_size);
  WorkloadSpec spec;
  spec.requests = 12;
  spec.prompt = parse_length_distribution("uniform:5:40");
  spec.output = parse_length_distribution("uniform:20:60");
  spec.sampling.temperature = 0.0f;
  const auto reqs = generate_workload(spec);
  // Reference: plenty of memory, nobody preempted.
  RealEngine roomy{&model, &tok, DType::f32, Device::cpu, {}};
  const EngineRun ref = run_real(reqs, {Policy::continuous, 12, 64}, roomy);
  CHECK(ref.preemptions == 0);
  const std::size_t per_token = kv_storage_bytes_per_token(model.config(), DType::f32);
  for (Preempt policy : {Preempt::recompute, Preempt::swap}) {
    INFO(preempt_name(policy));
    RealEngine tight = roomy;
    tight.memory.allocator = Allocator::paged;
    tight.memory.block_size = 4;
    tight.memory.budget_bytes = per_token * 4 * 30;  // 30 blocks: far less than 12 requests need
    tight.memory.swap_bytes = policy == Preempt::swap ? per_token * 4 * 40 : 0;
    SchedulerConfig sc{Policy::continuous, 12, 64, policy};
    const EngineRun run = run_real(reqs, sc, tight);
    CHECK(run.preemptions > 0);
    if (policy == Preempt::swap) CHECK(run.swapped_bytes > 0);
    for (std::size_t i = 0; i < reqs.size(); ++i) {
      INFO("request " << i);
      CHECK(run.requests[i].tokens == ref.requests[i].tokens);
    }
    for (const EngineStep& s : run.steps) CHECK(s.kv_reserved <= 30u * 4);
  }
}

TEST_CASE("memory: a request that cannot fit is an error naming the numbers", "[paged][engine]") {
  const Model model = make_synthetic_model("stories260K");
  const Tokenizer tok = Tokenizer::synthetic(model.config().vocab_size);
  Request r;
  r.prompt_len = 100;
  r.max_tokens = 100;
  RealEngine e{&model, &tok, DType::f32, Device::cpu, {}};
  e.memory.allocator = Allocator::paged;
  e.memory.block_size = 16;
  e.memory.budget_bytes = kv_storage_bytes_per_token(model.config(), DType::f32) * 16 * 4;
  try {
    run_real({r}, {}, e);
    FAIL("no error");
  } catch (const Error& err) {
    CHECK_THAT(err.what(),
               Catch::Contains("request 0 needs 13 blocks") && Catch::Contains("the pool has 4"));
  }
  e.memory.budget_bytes = 10;  // less than one block
  CHECK_THROWS_WITH(run_real({r}, {}, e), Catch::Contains("less than one block"));
  e.memory.block_size = 0;
  CHECK_THROWS_WITH(run_real({r}, {}, e), Catch::Contains("block size 0"));
}

TEST_CASE("parallel sampling: each branch equals its solo run, and paging stores the prompt once",
          "[paged][engine]") {
  const Model model = make_synthetic_model("stories260K");
  const Tokenizer tok = Tokenizer::synthetic(model.config().vocab_size);
  Request r;
  r.prompt_len = 45;  // the last prompt block is partly full: the branches copy it on write
  r.max_tokens = 20;
  r.n = 3;
  r.ignore_eos = true;
  r.sampling.temperature = 0.8f;
  r.sampling.seed = 5;
  const std::size_t per_token = kv_storage_bytes_per_token(model.config(), DType::f32);
  std::map<std::string, EngineRun> runs;
  for (Allocator a : {Allocator::contiguous, Allocator::paged}) {
    RealEngine e{&model, &tok, DType::f32, Device::cpu, {}};
    e.memory.allocator = a;
    e.memory.block_size = 8;
    e.memory.budget_bytes = per_token * 8 * 64;
    runs[allocator_name(a)] = run_real({r}, {Policy::continuous, 4, 64}, e);
  }
  for (const auto& [name, run] : runs) {
    INFO(name);
    REQUIRE(run.requests.size() == 3);
    for (int b = 0; b < 3; ++b) {
      // The same request alone, with the branch's seed and n = 1.
      Request solo = r;
      solo.n = 1;
      solo.sampling.seed = r.sampling.seed + 7919u * std::uint64_t(b);
      const EngineRun alone = run_real({solo}, {Policy::continuous, 4, 64},
                                       {&model, &tok, DType::f32, Device::cpu, {}});
      CHECK(run.requests[std::size_t(b)].branch == b);
      CHECK(run.requests[std::size_t(b)].tokens == alone.requests[0].tokens);
    }
    CHECK(run.requests[1].tokens != run.requests[2].tokens);  // different seeds, different text
  }
  const MemorySummary paged = memory_summary(runs["paged"]);
  const MemorySummary contiguous = memory_summary(runs["contiguous"]);
  // Paged: the 44 shared prompt positions are stored once, not three times.
  CHECK(paged.peak_bytes_saved_by_sharing >= 2 * 40 * per_token);
  CHECK(contiguous.peak_bytes_saved_by_sharing == 0);
  CHECK(paged.peak_kv_bytes_reserved < contiguous.peak_kv_bytes_reserved);
}

TEST_CASE("block size sweep: the engine's waste and the attention time at every block size",
          "[paged][engine]") {
  const Model model = make_synthetic_model("stories260K");
  const Tokenizer tok = Tokenizer::synthetic(model.config().vocab_size);
  WorkloadSpec spec;
  spec.requests = 6;
  spec.prompt = parse_length_distribution("uniform:5:40");
  spec.output = parse_length_distribution("uniform:5:30");
  const auto reqs = generate_workload(spec);
  MemoryConfig memory;
  memory.budget_bytes = kv_storage_bytes_per_token(model.config(), DType::f32) * 2048;
  std::vector<int> served;  // the block sizes the engine was asked for, in order
  auto serve = [&](const MemoryConfig& m) {
    CHECK(m.allocator == Allocator::paged);
    served.push_back(m.block_size);
    return run_real(reqs, {Policy::continuous, 6, 64}, {&model, &tok, DType::f32, Device::cpu, m});
  };
  const BlockSizeSweep s = block_size_sweep(serve, memory, model.config());
  CHECK(served == std::vector<int>{1, 4, 8, 16, 32, 64, 128});
  CHECK(s.context == std::min(1024, model.config().seq_len));
  CHECK(s.contiguous_seconds > 0.0);
  REQUIRE(s.rows.size() == served.size());
  for (const BlockSizeRow& r : s.rows) {
    CHECK(r.waste_fraction >= 0.0);
    CHECK(r.max_concurrent_sequences >= 1);
    CHECK(r.attention_seconds > 0.0);
    CHECK(r.vs_contiguous == Approx(r.attention_seconds / s.contiguous_seconds));
  }
  // One-position blocks waste nothing; a block of 128 wastes the most.
  CHECK(s.rows.front().waste_fraction <= s.rows.back().waste_fraction);
}

TEST_CASE("swap vs recompute table: 256 to 64K tokens, cut at the model's context",
          "[paged][unit]") {
  const Hardware h100 = hardware_by_name("h100-sxm");
  const CostOptions cost = cost_options_for(h100);
  const auto full = swap_vs_recompute_table(named_config("llama3-8b"), h100, cost, 50e9);
  REQUIRE(full.size() == 3);  // llama3-8b's context is 8192 positions
  CHECK(full[0].tokens == 256);
  CHECK(full[2].tokens == 4096);
  ModelConfig c = named_config("llama3-8b");
  c.seq_len = 131072;
  const auto rows = swap_vs_recompute_table(c, h100, cost, 50e9);
  REQUIRE(rows.size() == 5);
  for (const SwapVsRecompute& r : rows) {
    const SwapVsRecompute one = swap_vs_recompute(c, h100, cost, r.tokens, 50e9);
    CHECK(r.swap_seconds == one.swap_seconds);
    CHECK(r.recompute_seconds == one.recompute_seconds);
  }
  CHECK(rows.back().tokens == 65536);
}

TEST_CASE("runner: step_greedy on the CPU is the Sampler's greedy choice of step's logits",
          "[unit][runner][greedy]") {
  const Model model = make_synthetic_model("stories260K");
  const auto runner = make_runner(model, Device::cpu);
  KVCache a = make_cache(*runner), b = make_cache(*runner);
  Sampler greedy(SamplingParams{.temperature = 0.0f}, model.config().vocab_size);
  std::vector<int> seq = {1, 40, 7, 300};
  std::vector<float> logits;
  std::vector<int> next;
  for (int step = 0; step < 8; ++step) {
    const int from = step == 0 ? 0 : int(seq.size()) - 1;
    const std::span<const int> chunk = std::span<const int>(seq).subspan(std::size_t(from));
    run_sequence(*runner, chunk, from, a, LogitsMode::last, logits);
    const BatchEntry entry{chunk, from, &b};
    runner->step_greedy(std::span<const BatchEntry>(&entry, 1), next);
    REQUIRE(next.size() == 1);
    CHECK(next[0] == greedy.sample(logits, seq));
    seq.push_back(next[0]);
  }
  CHECK(runner->logits_bytes_copied() == 0);
}

TEST_CASE("memory: the fit check before the run uses the reservation rule in force",
          "[paged][engine]") {
  const ModelConfig c = make_synthetic_model("stories260K").config();
  Request r;
  r.prompt_len = 10;
  r.max_tokens = 10;
  MemoryConfig memory;
  memory.allocator = Allocator::contiguous;
  memory.budget_bytes = kv_storage_bytes_per_token(c, DType::f32) * 100;
  CHECK_NOTHROW(check_workload_fits({r}, memory, c, DType::f32, nullptr));
  // Reserving the whole context (512 positions) can never fit 100: said before the run, where
  // the scheduler would otherwise wait forever for room.
  memory.reserve = Reserve::context;
  CHECK_THROWS_WITH(check_workload_fits({r}, memory, c, DType::f32, nullptr),
                    Catch::Contains("request 0 needs 512 KV positions; the budget holds 100"));
  // Parallel samples each hold a whole reservation without paging.
  memory.reserve = Reserve::max_tokens;
  r.n = 6;
  CHECK_THROWS_WITH(check_workload_fits({r}, memory, c, DType::f32, nullptr),
                    Catch::Contains("request 0 needs 114 KV positions"));
  memory.allocator = Allocator::paged;
  memory.block_size = 16;
  memory.budget_bytes = kv_storage_bytes_per_token(c, DType::f32) * 16 * 2;
  CHECK_NOTHROW(check_workload_fits({r}, memory, c, DType::f32, nullptr));
}
