// Speculative decoding (chapter 07): tree attention, KV rollback, exact verification, and the
// losslessness claims: (a) greedy speculative == plain greedy on the golden prompts for every
// proposer; (b) the first two emitted tokens follow the target's exact distribution (chi-square)
// for every proposer, bad drafts included; (c) the same at temperature 0.7, top-p 0.9. (a) and
// (b) also run on paged KV caches, whose rollback gives blocks back and copies shared ones.
#include <algorithm>
#include <cstring>
#include <cmath>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <vector>

#include <nlohmann/json.hpp>
#include <omp.h>

#include "inferlab/analysis/chi_square.hpp"
#include "inferlab/app/cli_checks.hpp"
#include "inferlab/app/speculative_cli.hpp"
#include "inferlab/app/speculative_json.hpp"
#include "inferlab/analysis/speculative_compare.hpp"
#include "inferlab/base/error.hpp"
#include "inferlab/runtime/forward.hpp"
#include "inferlab/analysis/hardware.hpp"
#include "inferlab/kernels/attention.hpp"
#include "inferlab/kernels/kv_quant.hpp"
#include "inferlab/model/model.hpp"
#include "inferlab/analysis/speculative_sim.hpp"
#include "inferlab/analysis/speculative_speedup.hpp"
#include "inferlab/runtime/kv_rollback.hpp"
#include "inferlab/runtime/generate.hpp"
#include "inferlab/runtime/speculative_decoder.hpp"
#include "inferlab/model/tokenizer.hpp"
#include "model_cases.hpp"
#include "test_support.hpp"

using namespace inferlab;

namespace {

std::vector<float> random_floats(std::size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = d(gen);
  return v;
}

// What chapter 07 prints for the error @p f throws: a core ParameterError named by the flag that
// sets the parameter (the core's own message names no flag).
template <class F>
std::string printed_error(F&& f) {
  static CLI::App app;
  static SpeculativeFlags flags;
  static const bool declared = (add_speculative_flags(app, flags), true);
  (void)declared;
  try {
    f();
  } catch (const std::exception& e) {
    return flag_error_message(&app, e);
  }
  return "(nothing thrown)";
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// Logits of the last token of `tokens`, from an empty cache, causal.
std::vector<float> linear_logits(const Model& m, const std::vector<int>& tokens) {
  ForwardPass pass(m);
  KVCache cache(m.config());
  std::vector<float> logits;
  pass.forward(tokens, 0, cache, LogitsMode::last, logits);
  return logits;
}

// A proposer that ignores the context: K tokens, each drawn from one fixed distribution q. It
// stands for a draft as bad as we like (uniform; mass where the target has none).
class FixedProposer final : public Proposer {
 public:
  FixedProposer(std::vector<float> q, int k, std::uint64_t seed)
      : q_(std::move(q)), k_(k), rng_(seed) {}
  std::string name() const override { return "fixed-q"; }
  void propose(std::span<const int>, int max_nodes, DraftTree& out) override {
    out.clear();
    for (int i = 0; i < std::min(k_, max_nodes); ++i)
      out.add(sample_from(q_, rng_.next_f32()), i - 1, q_);
  }

 private:
  std::vector<float> q_;
  int k_;
  Rng rng_;
};

// The model tests run thousands of tiny forwards (stories260K: 64-wide). Verification calls of
// 4+ tokens cross the matmul's threading threshold, and on a busy machine waking threads for
// each costs more than the work; one thread keeps these tests' run time independent of the
// machine's load. The results do not depend on the thread count (batch invariance).
void use_one_thread() { omp_set_num_threads(1); }

}  // namespace

// ---------------------------------------------------------------------------------------------
// Tree attention
// ---------------------------------------------------------------------------------------------

TEST_CASE("attention over listed rows matches its reference, and the full list is causal attention",
          "[unit][kernel][speculative]") {
  const int Nh = 4, Nkv = 2, hs = 12, S = 20, T = 3;
  const auto q = random_floats(std::size_t(T) * Nh * hs, 1);
  const auto kf = random_floats(std::size_t(S) * Nkv * hs, 2);
  const auto vf = random_floats(std::size_t(S) * Nkv * hs, 3);
  // Token 0: rows 0..9 (causal at 9); token 1: a gappy tree path; token 2: one row.
  const std::vector<int> begin = {0, 10, 16, 17};
  const std::vector<int> rows = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 1, 2, 12, 15, 19, 7};
  for (DType type : {DType::f32, DType::f16, DType::int8}) {
    const std::size_t elem = kernels::kv_element_bytes(type);
    std::vector<std::uint8_t> kd(kf.size() * elem), vd(vf.size() * elem);
    std::vector<float> ks(std::size_t(S) * Nkv), vs(ks.size());
    kernels::kv_store_rows(type, kd.data(), ks.data(), kf.data(), S, Nkv, hs);
    kernels::kv_store_rows(type, vd.data(), vs.data(), vf.data(), S, Nkv, hs);
    const kernels::KVRowsView k{type, kd.data(), ks.data()}, v{type, vd.data(), vs.data()};
    std::vector<float> fast(q.size()), ref(q.size());
    kernels::attention_kv_rows_cpu(fast.data(), q.data(), k, v, begin.data(), rows.data(), T, Nh,
                                   Nkv, hs);
    kernels::attention_kv_rows_ref(ref.data(), q.data(), k, v, begin.data(), rows.data(), T, Nh,
                                   Nkv, hs);
    const auto rep = test::all_close(fast, ref, long(ref.size()), 1e-5, 1e-5);
    INFO("type " << int(type) << " max err " << rep.max_abs_err << " first bad " << rep.first_bad);
    CHECK(rep.ok);
    // Token 0 lists 0..9: the same bits as causal attention at position 9.
    std::vector<float> causal(std::size_t(Nh) * hs);
    const int pos9 = 9;
    kernels::attention_kv_cpu(causal.data(), q.data(), k, v, &pos9, 1, Nh, Nkv, hs);
    CHECK(std::memcmp(causal.data(), fast.data(), causal.size() * sizeof(float)) == 0);
  }
}

TEST_CASE(
    "tree forward: a chain is the causal forward bit for bit, and every tree node gets the "
    "logits of its own path",
    "[unit][forward][speculative]") {
  const Model m = make_synthetic_model("stories260K");
  ForwardPass pass(m);
  const std::vector<int> prefix = {1, 40, 77, 300, 12};
  const int base = static_cast<int>(prefix.size());
  KVCache cache(m.config());
  std::vector<float> logits;
  pass.forward(std::span<const int>(prefix).first(base - 1), 0, cache, LogitsMode::last, logits);

  SECTION("chain") {
    const std::vector<int> chunk = {prefix.back(), 9, 8, 7};
    const std::vector<int> parents = {-1, base, base + 1};  // rows base.. form a chain
    const TreeMask mask{base, parents};
    std::vector<float> tree_logits, causal_logits;
    pass.forward(chunk, base - 1, cache, LogitsMode::all, tree_logits, &mask);
    KVCache plain(m.config());
    pass.forward(std::span<const int>(prefix).first(base - 1), 0, plain, LogitsMode::last, logits);
    pass.forward(chunk, base - 1, plain, LogitsMode::all, causal_logits);
    CHECK(same_bits(tree_logits, causal_logits));
  }
  SECTION("branching tree, written in two calls (as the draft does level by level)") {
    // Nodes: 0:a 1:b (roots); 2:c under 0; 3:d under 1; 4:e under 1; 5:f under 3.
    const std::vector<int> tokens = {5, 6, 7, 8, 9, 10};
    const std::vector<int> parent_nodes = {-1, -1, 0, 1, 1, 3};
    std::vector<int> parent_rows;
    for (int p : parent_nodes) parent_rows.push_back(p < 0 ? -1 : base + p);
    const TreeMask mask{base, parent_rows};
    std::vector<float> first, second;
    std::vector<int> chunk1 = {prefix.back(), tokens[0], tokens[1]};
    pass.forward(chunk1, base - 1, cache, LogitsMode::all, first, &mask);
    pass.forward(std::span<const int>(tokens).subspan(2), base + 2, cache, LogitsMode::all, second,
                 &mask);
    const int V = m.config().vocab_size;
    for (int node = 0; node < 6; ++node) {
      std::vector<int> path;
      for (int a = node; a >= 0; a = parent_nodes[std::size_t(a)])
        path.push_back(tokens[std::size_t(a)]);
      std::vector<int> seq = prefix;
      seq.insert(seq.end(), path.rbegin(), path.rend());
      const float* row =
          node < 2 ? &first[std::size_t(node + 1) * V] : &second[std::size_t(node - 2) * V];
      const std::vector<float> got(row, row + V);
      INFO("node " << node);
      CHECK(same_bits(got, linear_logits(m, seq)));
    }
  }
  SECTION("malformed trees are refused") {
    const std::vector<int> bad = {-1, base + 1};  // row base+1's parent is itself
    const TreeMask mask{base, bad};
    const std::vector<int> chunk = {prefix.back(), 3, 4};
    CHECK_THROWS_WITH(pass.forward(chunk, base - 1, cache, LogitsMode::all, logits, &mask),
                      Catch::Contains("parent"));
    const std::vector<int> short_parents = {-1};
    const TreeMask mask2{base, short_parents};
    CHECK_THROWS_WITH(pass.forward(chunk, base - 1, cache, LogitsMode::all, logits, &mask2),
                      Catch::Contains("parents"));
    CHECK(cache.length() == base - 1);  // nothing was written
  }
}

// ---------------------------------------------------------------------------------------------
// Rollback and the model adaptor
// ---------------------------------------------------------------------------------------------

TEST_CASE("KV rollback: a kept tree path continues exactly like a cache built from it",
          "[unit][kv_cache][speculative]") {
  const Model m = make_synthetic_model("stories260K");
  // Contiguous, and paged with blocks of 3 positions: the tree rows 4..7 and the kept rows'
  // destinations straddle block boundaries.
  SpecModelOptions storage;
  SECTION("contiguous") { storage.block_size = 0; }
  SECTION("paged, blocks of 3") { storage.block_size = 3; }
  SpecModel target(m, storage);
  std::vector<float> logits;
  const std::vector<int> prefix = {1, 50, 60, 70};
  const int base = 4;
  target.forward(prefix, LogitsMode::last, logits);
  // Tree: nodes 0 (root), 1 (root), 2 under 1, 3 under 2; keep the path 1 -> 2 -> 3.
  const std::vector<int> tokens = {11, 22, 33, 44};
  const std::vector<int> parent_rows = {-1, -1, base + 1, base + 2};
  const TreeMask mask{base, parent_rows};
  target.forward(tokens, LogitsMode::all, logits, &mask);
  const std::vector<int> kept = {base + 1, base + 2, base + 3};
  target.keep_rows(base, kept);
  REQUIRE(target.length() == base + 3);
  std::vector<float> next;
  const int probe = 99;
  target.forward(std::span<const int>(&probe, 1), LogitsMode::last, next);
  CHECK(same_bits(next, linear_logits(m, {1, 50, 60, 70, 22, 33, 44, 99})));

  // The token bookkeeping follows: the longest cached prefix of a context is found again.
  CHECK(target.rollback_to_prefix_of(std::vector<int>{1, 50, 60, 70, 22, 5}) == 5);
  CHECK(target.length() == 5);
  CHECK_THROWS_WITH(target.truncate(6), Catch::Contains("truncate"));
  const std::vector<int> not_ascending = {base + 1, base};
  CHECK_THROWS_WITH(target.keep_rows(base, not_ascending), Catch::Contains("ascending"));
  if (storage.block_size > 0) {
    // The rolled-back sequence holds only the blocks its 5 positions need.
    CHECK(target.allocator()->num_used() == 2);
  }
}

namespace {

// A paged sequence of `blocks` blocks of B positions over a host pool, with its allocator and
// rollback (chapter 05's memory, one sequence).
struct PagedFixture {
  const Model model = make_synthetic_model("stories260K");
  HostKVPool pool;
  BlockAllocator alloc;
  KVSequence seq;
  PagedKVRollback rollback;
  ForwardPass pass;
  PagedFixture(int blocks, int B)
      : pool(model.config(), blocks, B, DType::f32),
        alloc(blocks),
        seq(pool),
        rollback(seq, alloc),
        pass(model) {}
  // Forwards tokens after the valid positions (blocks reserved first), returns the last logits.
  std::vector<float> forward(const std::vector<int>& tokens, const TreeMask* tree = nullptr) {
    std::vector<float> logits;
    rollback.reserve(seq.length() + static_cast<int>(tokens.size()));
    pass.forward(tokens, seq.length(), seq, tree ? LogitsMode::all : LogitsMode::last, logits,
                 tree);
    return logits;
  }
  std::vector<std::uint8_t> block_bytes(int id) const {
    std::vector<std::uint8_t> out(pool.bytes_per_block());
    pool.read_block(id, out);
    return out;
  }
};

}  // namespace

TEST_CASE("paged KV rollback: truncate gives back exactly the blocks past the new end",
          "[unit][kv_cache][speculative][paged]") {
  PagedFixture f(8, 4);
  const std::vector<int> ten = {1, 50, 60, 70, 80, 90, 100, 110, 120, 130};
  f.forward(ten);
  REQUIRE(f.seq.length() == 10);
  REQUIRE(f.alloc.num_used() == 3);  // ceil(10 / 4)
  const std::vector<int> table = f.seq.blocks();

  f.rollback.truncate(9);  // still 3 blocks: position 8 is in the third
  CHECK(f.alloc.num_used() == 3);
  f.rollback.truncate(5);  // ceil(5 / 4) = 2: the third block is free again
  CHECK(f.alloc.num_used() == 2);
  CHECK(f.seq.blocks() == std::vector<int>(table.begin(), table.begin() + 2));
  CHECK(f.alloc.ref_count(table[2]) == 0);
  CHECK(f.rollback.length() == 5);
  f.rollback.truncate(4);  // a block boundary: exactly one block left
  CHECK(f.alloc.num_used() == 1);
  CHECK(f.seq.blocks().size() == 1);

  // The kept prefix continues like a cache built from it, in freshly reserved blocks.
  const std::vector<float> next = f.forward({7, 8, 9});
  CHECK(f.alloc.num_used() == 2);
  CHECK(same_bits(next, linear_logits(f.model, {1, 50, 60, 70, 7, 8, 9})));

  f.rollback.truncate(0);
  CHECK(f.alloc.num_used() == 0);
  CHECK(f.seq.blocks().empty());
  CHECK_THROWS_WITH(f.rollback.truncate(1), Catch::Contains("truncate 0 positions to 1"));

  // reserve() refuses what the allocator cannot give, and changes nothing.
  CHECK(f.rollback.blocks_needed(33) == 9);
  CHECK_THROWS_WITH(f.rollback.reserve(33),
                    Catch::Contains("9 more blocks") && Catch::Contains("8 are free"));
  CHECK(f.alloc.num_used() == 0);
  // A pool and an allocator of different sizes cannot be paired.
  BlockAllocator other(7);
  CHECK_THROWS_WITH(PagedKVRollback(f.seq, other), Catch::Contains("8 blocks"));
}

TEST_CASE("paged KV rollback: keep_rows into a shared block copies it instead of writing through",
          "[unit][kv_cache][speculative][paged]") {
  PagedFixture f(8, 4);
  const std::vector<int> prefix = {1, 50, 60, 70};
  const int base = 4;
  f.forward(prefix);
  // The same tree as above at rows 4..7 (block 1): keep the path 1 -> 2 -> 3.
  const std::vector<int> tokens = {11, 22, 33, 44};
  const std::vector<int> parent_rows = {-1, -1, base + 1, base + 2};
  const TreeMask mask{base, parent_rows};
  f.forward(tokens, &mask);
  REQUIRE(f.alloc.num_used() == 2);

  // A second table holds both blocks (a fork, or a prefix cache's reference).
  KVSequence other(f.pool);
  for (int id : f.seq.blocks()) {
    other.append_block(id);
    f.alloc.retain(id);
  }
  other.set_length(8);
  const std::vector<int> shared = f.seq.blocks();
  const std::vector<std::uint8_t> before0 = f.block_bytes(shared[0]);
  const std::vector<std::uint8_t> before1 = f.block_bytes(shared[1]);

  const std::vector<int> kept = {base + 1, base + 2, base + 3};
  f.rollback.keep_rows(base, kept);

  // Block 0 was not written (rows 0..3 stay in place): still shared. Block 1 received the kept
  // rows: the sequence now has its own copy, and the other table's block is untouched.
  CHECK(f.seq.blocks()[0] == shared[0]);
  CHECK(f.alloc.ref_count(shared[0]) == 2);
  REQUIRE(f.seq.blocks().size() == 2);
  CHECK(f.seq.blocks()[1] != shared[1]);
  CHECK(f.alloc.ref_count(shared[1]) == 1);
  CHECK(f.alloc.ref_count(f.seq.blocks()[1]) == 1);
  CHECK(f.alloc.num_used() == 3);
  CHECK(f.block_bytes(shared[0]) == before0);
  CHECK(f.block_bytes(shared[1]) == before1);
  CHECK(other.blocks() == shared);

  // And the sequence continues exactly like one built from the kept path.
  const std::vector<float> next = f.forward({99});
  CHECK(same_bits(next, linear_logits(f.model, {1, 50, 60, 70, 22, 33, 44, 99})));
  CHECK(f.block_bytes(shared[1]) == before1);

  // Rolling back past the shared block only drops this table's reference.
  f.rollback.truncate(0);
  CHECK(f.alloc.ref_count(shared[0]) == 1);
  CHECK(f.alloc.ref_count(shared[1]) == 1);
  CHECK(f.alloc.num_used() == 2);  // the other table's two blocks
}

TEST_CASE(
    "early exit: all layers is the model itself, fewer layers is a different, cheaper "
    "model, and out-of-range exits are refused",
    "[unit][speculative]") {
  const Model m = make_synthetic_model("stories260K");
  const int L = m.config().n_layers;
  auto full = SpecModel::early_exit(m, L);
  auto shallow = SpecModel::early_exit(m, 1);
  const std::vector<int> seq = {1, 20, 30};
  std::vector<float> a, b;
  full->forward(seq, LogitsMode::last, a);
  shallow->forward(seq, LogitsMode::last, b);
  CHECK(same_bits(a, linear_logits(m, seq)));
  CHECK_FALSE(same_bits(b, a));
  CHECK(shallow->config().n_layers == 1);
  CHECK_THROWS_WITH(SpecModel::early_exit(m, 0), Catch::Contains("exit layer 0"));
  CHECK_THROWS_WITH(SpecModel::early_exit(m, L + 1), Catch::Contains(std::to_string(L + 1)));
  CHECK_THROWS_WITH(Model::first_layers_view(m, 1).save("/tmp/never_written.bin"),
                    Catch::Contains("view"));
}

TEST_CASE("n-gram lookup proposes the continuation of the latest longest match",
          "[unit][speculative]") {
  NgramProposer ngram(3, 4, 100);
  DraftTree t;
  // ... 5 6 7 8 9 ... 6 7 -> the last 2-gram "6 7" appeared at 1..2, followed by 8 9 10 6.
  ngram.propose(std::vector<int>{5, 6, 7, 8, 9, 10, 6, 7}, 10, t);
  CHECK(t.tokens == std::vector<int>{8, 9, 10, 6});
  CHECK(t.is_chain());
  CHECK(t.q[0][8] == 1.0f);
  ngram.propose(std::vector<int>{5, 6, 7, 8, 9, 10, 6, 7}, 2, t);  // room for two only
  CHECK(t.tokens == std::vector<int>{8, 9});
  ngram.propose(std::vector<int>{1, 2, 3}, 10, t);  // no earlier occurrence of anything
  CHECK(t.size() == 0);
  CHECK_THAT(printed_error([] { NgramProposer(0, 4, 100); }), Catch::Contains("--ngram 0"));
  CHECK_THAT(printed_error([] { NgramProposer(2, 0, 100); }), Catch::Contains("--k 0"));
  CHECK_THROWS_WITH(NgramProposer(0, 4, 100), !Catch::Contains("--"));
  CHECK_THROWS_AS(NgramProposer(2, 0, 100), ParameterError);
}

// ---------------------------------------------------------------------------------------------
// Verification on a small vocabulary with known p and q
// ---------------------------------------------------------------------------------------------

TEST_CASE(
    "verification is exact for a chain and for a tree, with bad drafts too (chi-square, "
    "known p and q)",
    "[unit][speculative][statistical]") {
  // V = 5; p is the target's distribution at every node (a fixed table keeps the exact
  // distribution of the first token known: it is p). N = 40000 rounds: a bin of probability
  // 0.05 then expects 2000, and a deviation of 1 percentage point in it adds about 2 to the
  // statistic per bin... the point is power, shown below on the classic bug.
  const std::vector<float> p = {0.5f, 0.25f, 0.15f, 0.1f, 0.0f};
  const std::vector<std::pair<const char*, std::vector<float>>> drafts = {
      {"close q", {0.4f, 0.3f, 0.2f, 0.1f, 0.0f}},
      {"uniform q", {0.2f, 0.2f, 0.2f, 0.2f, 0.2f}},
      {"q with mass where p has none", {0.05f, 0.05f, 0.05f, 0.05f, 0.8f}},
  };
  const int N = 40000;
  const std::vector<double> expected(p.begin(), p.end());
  for (const auto& [name, q] : drafts) {
    for (int branch : {1, 2}) {
      Rng draft_rng(7), verify_rng(11);
      std::vector<long> first(5, 0);
      long accepted = 0;
      for (int run = 0; run < N; ++run) {
        DraftTree t;
        // Depth 2; siblings drawn without replacement from q (q_j = q minus earlier siblings).
        std::vector<int> level = {-1};
        for (int d = 0; d < 2; ++d) {
          std::vector<int> next;
          for (int parent : level) {
            std::vector<float> w = q;
            for (int j = 0; j < branch; ++j) {
              float total = 0.0f;
              for (float x : w) total += x;
              std::vector<float> qj(w.size());
              for (std::size_t i = 0; i < w.size(); ++i) qj[i] = w[i] / total;
              const int x = sample_from(qj, draft_rng.next_f32());
              next.push_back(t.add(x, parent, qj));
              w[std::size_t(x)] = 0.0f;
            }
          }
          level = next;
        }
        std::vector<float> rows;
        for (int i = 0; i <= t.size(); ++i) rows.insert(rows.end(), p.begin(), p.end());
        const Verdict v = verify_draft(t, rows, false, verify_rng);
        const int tok = v.path.empty() ? v.next_token : t.tokens[std::size_t(v.path[0])];
        ++first[std::size_t(tok)];
        accepted += long(v.path.size());
      }
      const ChiSquareResult r = chi_square_test(expected, first);
      INFO(name << ", branch " << branch << ": chi2 " << r.statistic << " dof " << r.dof << " p "
                << r.p_value << ", accepted/round " << double(accepted) / N);
      CHECK(r.p_value > 1e-3);
      CHECK(first[4] == 0);  // p(4) = 0: never emitted, however much q likes it
    }
  }
  // Power: the classic bug (on rejection, draw from p instead of norm(max(0, p - q))) gives the
  // first token min(p, q) + (1 - sum min(p, q)) p. With the uniform q and N = 40000 the same
  // test must reject it.
  {
    const std::vector<float> q(5, 0.2f);
    std::vector<float> bug(5);
    float beta = 0.0f;
    for (int i = 0; i < 5; ++i) beta += std::min(p[std::size_t(i)], q[std::size_t(i)]);
    for (int i = 0; i < 5; ++i)
      bug[std::size_t(i)] =
          std::min(p[std::size_t(i)], q[std::size_t(i)]) + (1.0f - beta) * p[std::size_t(i)];
    Rng rng(3);
    std::vector<long> counts(5, 0);
    for (int run = 0; run < N; ++run) ++counts[std::size_t(sample_from(bug, rng.next_f32()))];
    CHECK(chi_square_test(expected, counts).p_value < 1e-3);
  }
}

TEST_CASE("greedy verification accepts exactly the target's argmax and draws nothing",
          "[unit][speculative]") {
  DraftTree t;
  const std::vector<float> unused(4, 0.25f);
  t.add(2, -1, unused);  // 0
  t.add(1, -1, unused);  // 1
  t.add(3, 1, unused);   // 2 under 1
  // p rows (one-hot): after the context the argmax is 1, after node 1 it is 0.
  const std::vector<float> p = {0,           1, 0, 0, /*node0*/ 1, 0, 0, 0, /*node1*/ 1, 0, 0, 0,
                                /*node2*/ 0, 0, 1, 0};
  Rng rng(5), untouched(5);
  const Verdict v = verify_draft(t, p, true, rng);
  CHECK(v.path == std::vector<int>{1});
  CHECK(v.next_token == 0);
  CHECK(rng.next_u32() == untouched.next_u32());
  CHECK_THROWS_WITH(verify_draft(t, std::vector<float>(7, 0.f), true, rng),
                    Catch::Contains("rows"));
}

// ---------------------------------------------------------------------------------------------
// (a) Greedy speculative decoding reproduces the golden greedy outputs, for every proposer
// ---------------------------------------------------------------------------------------------

namespace {

// (a) for target and drafts on `storage`: every proposer's greedy tokens are the golden ones.
// Paged storage also checks that each round's rollback left the target holding exactly the
// blocks its positions need.
void check_greedy_golden(const SpecModelOptions& storage) {
  use_one_thread();
  const test::ModelCases mc = test::model_cases();
  const Model& target_model = mc.model;
  const Model random_draft = make_synthetic_model("stories260K");  // a poor draft, same vocab
  SamplingParams greedy;
  greedy.temperature = 0.0f;
  SpecModel target(target_model, storage);
  SpecModel self_draft(target_model, storage);  // a perfect draft: every guess accepted, bonus path
  SpecModel poor_draft(random_draft, storage);
  auto exit1 = SpecModel::early_exit(target_model, 1, storage);
  auto exit3 = SpecModel::early_exit(target_model, 3, storage);
  const std::vector<int>& ends = mc.tokenizer.end_of_generation_ids();

  struct Case {
    std::string label;
    std::unique_ptr<Proposer> proposer;
  };
  std::vector<Case> cases;
  const int V = target_model.config().vocab_size;
  // K = 1 (the smallest round), 4, and 8 where the whole chain is often accepted.
  cases.push_back(
      {"draft(self) k=1", std::make_unique<DraftModelProposer>(self_draft, greedy, 1, "draft")});
  cases.push_back(
      {"draft(self) k=8", std::make_unique<DraftModelProposer>(self_draft, greedy, 8, "draft")});
  cases.push_back(
      {"draft(random) k=4", std::make_unique<DraftModelProposer>(poor_draft, greedy, 4, "draft")});
  cases.push_back(
      {"early-exit 1 k=1", std::make_unique<DraftModelProposer>(*exit1, greedy, 1, "early-exit")});
  cases.push_back(
      {"early-exit 3 k=4", std::make_unique<DraftModelProposer>(*exit3, greedy, 4, "early-exit")});
  cases.push_back({"ngram 3 k=4", std::make_unique<NgramProposer>(3, 4, V)});
  cases.push_back({"ngram 1 k=8", std::make_unique<NgramProposer>(1, 8, V)});
  cases.push_back({"tree 2x3 early-exit 3", std::make_unique<TreeProposer>(*exit3, greedy, 2, 3)});
  cases.push_back({"tree 3x2 self", std::make_unique<TreeProposer>(self_draft, greedy, 3, 2)});
  cases.push_back({"tree 2x2 random", std::make_unique<TreeProposer>(poor_draft, greedy, 2, 2)});

  for (const test::GreedyCase& g : mc.cases) {
    const std::vector<int>& prompt = g.prompt_tokens;
    const std::vector<int>& expected = g.tokens;
    const int steps = g.steps;
    for (Case& c : cases) {
      const SpecGeneration s =
          speculative_generate(target, *c.proposer, prompt, steps, greedy, ends);
      INFO(c.label << ", prompt '" << g.prompt << "', steps " << steps << ", acceptance "
                   << s.stats.acceptance_rate());
      CHECK(s.tokens == expected);
      if (c.label.rfind("draft(self)", 0) == 0) CHECK(s.stats.acceptance_rate() == 1.0);
      if (storage.block_size > 0) {
        const int B = storage.block_size;
        CHECK(target.allocator()->num_used() == (target.length() + B - 1) / B);
      }
    }
    CHECK(plain_generate(target, prompt, steps, greedy, ends).tokens == expected);
  }
}

}  // namespace

TEST_CASE("greedy speculative decoding gives the golden greedy tokens for every proposer",
          "[invariant][speculative]") {
  check_greedy_golden(SpecModelOptions{});
}

TEST_CASE(
    "greedy speculative decoding on paged KV caches gives the golden greedy tokens for "
    "every proposer",
    "[invariant][speculative][paged]") {
  // Blocks of 5 positions: rounds of K = 1..8 tokens end and roll back inside and across blocks.
  SpecModelOptions paged;
  paged.block_size = 5;
  check_greedy_golden(paged);
}

// ---------------------------------------------------------------------------------------------
// (b), (c) The first two emitted tokens follow the target's exact distribution
// ---------------------------------------------------------------------------------------------

namespace {

// P(t1, t2 | context) = p(t1 | context) p(t2 | context, t1), both the target's sampling
// distributions, as a dense (V * V) table indexed t1 * V + t2.
std::vector<double> exact_pair_distribution(const Model& m, const std::vector<int>& context,
                                            const SamplingParams& params) {
  const int V = m.config().vocab_size;
  ForwardPass pass(m);
  KVCache cache(m.config());
  Sampler sampler(params, V);
  std::vector<float> logits;
  pass.forward(context, 0, cache, LogitsMode::last, logits);
  const std::vector<float> p1 = sampler.distribution(logits, context);
  std::vector<double> pairs(std::size_t(V) * V, 0.0);
  std::vector<int> history = context;
  history.push_back(0);
  const int n = static_cast<int>(context.size());
  for (int t1 = 0; t1 < V; ++t1) {
    if (p1[std::size_t(t1)] <= 0.0f) continue;
    cache.set_length(n);
    history.back() = t1;
    pass.forward(std::span<const int>(&t1, 1), n, cache, LogitsMode::last, logits);
    const std::vector<float> p2 = sampler.distribution(logits, history);
    for (int t2 = 0; t2 < V; ++t2)
      pairs[std::size_t(t1) * V + t2] = double(p1[std::size_t(t1)]) * p2[std::size_t(t2)];
  }
  return pairs;
}

// Runs the chi-square test below for the proposers named in `only` (all when empty), with
// target and drafts on `storage`.
void check_first_two_tokens(const SamplingParams& base_params, const SpecModelOptions& storage = {},
                            const std::vector<std::string>& only = {}) {
  use_one_thread();
  const Model model = Model::load(test::model_file("stories260K.bin"));
  const Tokenizer tok = Tokenizer::load(test::model_file("tok512.bin"));
  const int V = model.config().vocab_size;
  const std::vector<int> context = tok.encode("Once upon a time, there was a", true);
  const std::vector<double> exact = exact_pair_distribution(model, context, base_params);

  const Model random_model = make_synthetic_model("stories260K");
  SpecModel target(model, storage);
  SpecModel poor(random_model, storage);
  auto exit2 = SpecModel::early_exit(model, 2, storage);

  // The nucleus of p after the context (for the draft that puts its mass outside it).
  std::vector<float> outside(std::size_t(V), 0.0f);
  {
    std::vector<float> p1(std::size_t(V), 0.0f);
    for (int t1 = 0; t1 < V; ++t1)
      for (int t2 = 0; t2 < V; ++t2) p1[std::size_t(t1)] += float(exact[std::size_t(t1) * V + t2]);
    float total = 0.0f;
    for (int t = 0; t < V; ++t) {
      // 90% of q on tokens p never draws (or almost never, when no filter zeroes any), 10%
      // spread over all, so q > 0 wherever it proposes.
      outside[std::size_t(t)] = (p1[std::size_t(t)] < 1e-4f ? 1.0f : 0.0f);
      total += outside[std::size_t(t)];
    }
    REQUIRE(total > 0.0f);
    for (float& x : outside) x = 0.9f * x / total + 0.1f / float(V);
  }
  const std::vector<float> uniform(std::size_t(V), 1.0f / float(V));

  // N = 20000 runs. Bins: every pair with expected count >= 5 (P >= 2.5e-4), the rest pooled.
  // Significance 1e-3 with fixed seeds, so the outcome is deterministic. Power: the same N and
  // threshold reject the classic bug (resampling from p after a rejection) on the first token,
  // as the small-vocabulary test above shows; on this context the bug moves the first token's
  // distribution by a noncentrality N * sum (dP)^2 / P well above 100 for the uniform draft.
  const int N = 20000, K = 3;
  const std::vector<std::string> names = {"draft(random)",       "early-exit 2", "ngram 2",
                                          "tree 2x2 early-exit", "uniform q",    "q outside p"};
  for (const std::string& name : names) {
    if (!only.empty() && std::find(only.begin(), only.end(), name) == only.end()) continue;
    std::map<long, long> counts;
    for (int run = 0; run < N; ++run) {
      SamplingParams params = base_params;
      params.seed = 1000 + std::uint64_t(run);
      std::unique_ptr<Proposer> proposer;
      if (name == "draft(random)")
        proposer = std::make_unique<DraftModelProposer>(poor, params, K, "draft");
      if (name == "early-exit 2")
        proposer = std::make_unique<DraftModelProposer>(*exit2, params, K, "early-exit");
      if (name == "ngram 2") proposer = std::make_unique<NgramProposer>(2, K, V);
      if (name == "tree 2x2 early-exit")
        proposer = std::make_unique<TreeProposer>(*exit2, params, 2, 2);
      if (name == "uniform q")
        proposer = std::make_unique<FixedProposer>(uniform, K, params.seed * 7 + 1);
      if (name == "q outside p")
        proposer = std::make_unique<FixedProposer>(outside, K, params.seed * 7 + 1);
      SpeculativeDecoder decoder(target, *proposer, params);
      std::vector<int> seq = context;
      while (seq.size() < context.size() + 2) decoder.round(seq, model.config().seq_len);
      ++counts[long(seq[context.size()]) * V + seq[context.size() + 1]];
    }
    std::vector<long> observed(exact.size(), 0);
    for (const auto& [pair, c] : counts) observed[std::size_t(pair)] = c;
    const ChiSquareResult r = chi_square_test(exact, observed);
    INFO(name << ": chi2 " << r.statistic << ", " << r.dof << " dof, p-value " << r.p_value);
    CHECK(r.p_value > 1e-3);
  }
}

}  // namespace

TEST_CASE(
    "(b) speculative sampling at T = 1: the first two tokens follow the target exactly, "
    "for every proposer and bad drafts",
    "[model][speculative][statistical]") {
  SamplingParams p;
  p.temperature = 1.0f;
  check_first_two_tokens(p);
}

TEST_CASE(
    "(b) on paged KV caches: the first two tokens follow the target exactly (tree and "
    "early exit)",
    "[model][speculative][statistical][paged]") {
  // The same N, bins and significance as (b), so its power statement holds; two proposers
  // only (the tree's rollback moves rows between blocks, the early exit's truncates them) to
  // keep the run short.
  SamplingParams p;
  p.temperature = 1.0f;
  SpecModelOptions paged;
  paged.block_size = 4;
  check_first_two_tokens(p, paged, {"early-exit 2", "tree 2x2 early-exit"});
}

TEST_CASE("(c) the same at temperature 0.7, top-p 0.9", "[model][speculative][statistical]") {
  SamplingParams p;
  p.temperature = 0.7f;
  p.top_p = 0.9f;
  check_first_two_tokens(p);
}

// ---------------------------------------------------------------------------------------------
// The formula, the simulator, the chi-square helper, bad input
// ---------------------------------------------------------------------------------------------

TEST_CASE("the standard model: tokens per round and speed-up", "[unit][speculative]") {
  CHECK(expected_tokens_per_round(0.0, 5) == 1.0);
  CHECK(expected_tokens_per_round(1.0, 5) == 6.0);
  CHECK(expected_tokens_per_round(0.5, 2) == Approx(1.75));  // 1 + 0.5 + 0.25
  CHECK(predicted_speedup(0.8, 4, 0.0, 1.0) == Approx((1 - std::pow(0.8, 5)) / 0.2));
  CHECK(predicted_speedup(0.5, 2, 0.25, 1.0) == Approx(1.75 / 1.5));
}

TEST_CASE(
    "simulated draft-target pair on an H100: speculation pays at batch 1 and stops paying "
    "as the batch grows",
    "[unit][speculative]") {
  const Hardware h100 = hardware_by_name("h100-sxm");
  const std::vector<int> batches = {1, 4, 16, 64, 256, 1024};
  const auto points = simulate_speculation(named_config("llama3-70b"), named_config("llama3-8b"),
                                           h100, 0.8, 4, 1024, batches);
  REQUIRE(points.size() == batches.size());
  CHECK(points[0].speedup > 1.5);
  for (std::size_t i = 1; i < points.size(); ++i)
    CHECK(points[i].speedup <= points[i - 1].speedup + 1e-12);
  CHECK(break_even_batch(points) > 1);
  CHECK_FALSE(points.back().verify_memory_bound);
  // A sequence's tokens/s is its speed-up over the plain step's one token per step.
  for (const SpecSimPoint& p : points) CHECK(p.tokens_per_s == Approx(p.speedup / p.plain_step_s));
  const auto bad_alpha = [&] {
    simulate_speculation(named_config("llama3-70b"), named_config("llama3-8b"), h100, 1.5, 4,
                         1024, batches);
  };
  CHECK_THAT(printed_error(bad_alpha), Catch::Contains("--acceptance 1.5"));
  CHECK_THROWS_WITH(bad_alpha(), !Catch::Contains("--"));
}

TEST_CASE("simulated K sweep: one curve per K over batches 1, 2, 4, ..., each simulate_speculation",
          "[unit][speculative]") {
  CHECK(k_values(4, false) == std::vector<int>{4});
  CHECK(k_values(4, true) == std::vector<int>{1, 2, 3, 4, 5, 6, 7, 8});
  const Hardware h100 = hardware_by_name("h100-sxm");
  const ModelConfig target = named_config("llama3-70b"), draft = named_config("llama3-8b");
  const SpecSimSweep sweep =
      simulate_k_sweep(target, draft, h100, 0.8, std::vector<int>{1, 4}, 1024, 64);
  CHECK(sweep.batches == std::vector<int>{1, 2, 4, 8, 16, 32, 64});
  CHECK(sweep.alpha == 0.8);
  CHECK(sweep.context == 1024);
  REQUIRE(sweep.curves.size() == 2);
  CHECK(sweep.curves[0].k == 1);
  CHECK(sweep.curves[1].k == 4);
  const auto direct =
      simulate_speculation(target, draft, h100, 0.8, 4, 1024, sweep.batches, cost_options_for(h100));
  REQUIRE(sweep.curves[1].points.size() == direct.size());
  for (std::size_t i = 0; i < direct.size(); ++i)
    CHECK(sweep.curves[1].points[i].speedup == direct[i].speedup);
  CHECK(sweep.curves[1].break_even == break_even_batch(direct));
  CHECK_THROWS_WITH(simulate_k_sweep(target, draft, h100, 0.8, std::vector<int>{4}, 1024, 0),
                    Catch::Contains("batch 0"));
}

TEST_CASE("the stopping rule: the first generated BOS ends the sequence, else `steps` positions",
          "[unit][speculative]") {
  std::vector<int> t = {kBosToken, 5, 6, 7, 8};  // a round appended 6, 7, 8
  CHECK_FALSE(generation_stop(t, 3, 10, 512).has_value());
  CHECK(t.size() == 5);
  t.insert(t.end(), {9, kBosToken, 11, kBosToken});  // a round appended 4, BOS the second
  CHECK(generation_stop(t, 4, 10, 512) == GenerationStop::eos);
  CHECK(t == std::vector<int>{kBosToken, 5, 6, 7, 8, 9, kBosToken});
  std::vector<int> u = {kBosToken, 5, 6, 7};  // 4 tokens: 3 positions forwarded
  CHECK_FALSE(generation_stop(u, 1, 4, 512).has_value());
  CHECK(generation_stop(u, 1, 3, 512) == GenerationStop::max_steps);
  CHECK(generation_stop(u, 1, 3, 3) == GenerationStop::context);
  // Only the appended tokens are looked at: the prompt's own BOS ends nothing.
  std::vector<int> v = {kBosToken, 5};
  CHECK_FALSE(generation_stop(v, 1, 10, 512).has_value());
}

TEST_CASE("chapter 07's checks: the core names the parameter, the chapter prints its flag",
          "[unit][speculative]") {
  const ModelConfig c = named_config("stories260K");
  REQUIRE(c.seq_len == 512);
  REQUIRE(c.n_layers == 5);
  ProposerChoice choice;
  choice.k = 0;
  CHECK(printed_error([&] { check_proposer_choice(choice, c, false); }) ==
        "--k 0: must be in [1, 511] (the context is 512 tokens)");
  choice.k = 512;
  CHECK_THROWS_AS(check_proposer_choice(choice, c, false), ParameterError);
  choice.k = 4;
  choice.exit_layer = 99;
  CHECK(printed_error([&] { check_proposer_choice(choice, c, false); }) ==
        "--exit-layer 99: must be in [1, 4] (the model has 5 layers)");
  choice.exit_layer = 0;
  CHECK(choice.early_exit_layers(c) == 2);
  choice.storage.block_size = 1000;
  CHECK(printed_error([&] { check_proposer_choice(choice, c, false); }) ==
        "--block-size 1000: larger than the model's context of 512 positions");
  CHECK_THROWS_WITH(check_proposer_choice(choice, c, false), !Catch::Contains("--"));
  choice.storage.block_size = 16;
  CHECK_NOTHROW(check_proposer_choice(choice, c, false));
  // The n-gram lookup alone runs no early exit, so its layer count is not checked.
  choice.proposer = "ngram";
  CHECK(printed_error([&] { check_proposer_choice(choice, c, false); }) == "(nothing thrown)");
  // The tree runs on the CPU only.
  choice.proposer = "tree";
  CHECK(choice.tree_runs());
  choice.storage.device = Device::cuda;
  CHECK_FALSE(choice.tree_runs());
  CHECK(tree_node_count(2, 3) == 14.0);
  CHECK(tree_node_count(16, 4) > kMaxTreeNodes);
}

TEST_CASE("chapter 07's experiment: plain decoding, then every chosen proposer at every K",
          "[model][speculative]") {
  const Model target = make_synthetic_model("stories260K");
  SamplingParams greedy;
  greedy.temperature = 0.0f;
  ProposerChoice choice;  // "all", without a draft model: early exit, n-gram, the tree
  choice.k = 2;
  choice.tree_branch = 2;
  choice.tree_depth = 2;
  const std::vector<int> prompt = {kBosToken, 50, 60};
  const std::vector<int> ends = {kBosToken};
  const ProposerComparison res =
      compare_proposers(target, nullptr, prompt, 24, greedy, choice, ends);
  CHECK(res.plain.tokens.size() <= 25);
  REQUIRE(res.runs.size() == 3);
  CHECK(res.runs[0].name == "early-exit");
  CHECK(res.runs[1].name == "ngram");
  CHECK(res.runs[2].name == "tree");
  CHECK(res.runs[2].k == 2);  // the tree's K is its depth
  for (const ProposerRun& r : res.runs) {
    CHECK(r.same_as_plain);
    CHECK(r.run.tokens == res.plain.tokens);
    CHECK(r.report.tokens_per_s > 0.0);
  }
  const nlohmann::json out = to_json(res);
  CHECK(out["tokens"] == res.runs.front().run.tokens);
  REQUIRE(out["proposers"].size() == 3);
  CHECK(out["proposers"][2]["name"] == "tree");
  CHECK(out["proposers"][0].contains("same_tokens_as_plain"));

  choice.sweep_k = true;
  choice.proposer = "ngram";
  const ProposerComparison sweep =
      compare_proposers(target, nullptr, prompt, 24, greedy, choice, ends);
  REQUIRE(sweep.runs.size() == std::size_t(kSweepMaxK));
  for (int k = 1; k <= kSweepMaxK; ++k) CHECK(sweep.runs[std::size_t(k - 1)].k == k);
  choice.proposer = "draft";  // and no draft model
  CHECK_THROWS_WITH(compare_proposers(target, nullptr, prompt, 24, greedy, choice, ends),
                    Catch::Contains("no proposer"));
}

TEST_CASE("chi-square helper: known quantiles, pooling, impossible observations",
          "[unit][statistical]") {
  CHECK(chi_square_survival(3.841459, 1) == Approx(0.05).margin(1e-6));
  CHECK(chi_square_survival(18.307038, 10) == Approx(0.05).margin(1e-6));
  CHECK(chi_square_survival(124.342113, 100) == Approx(0.05).margin(1e-6));
  const std::vector<double> e = {0.5, 0.4999, 0.0001};
  const ChiSquareResult r = chi_square_test(e, std::vector<long>{500, 500, 0});
  CHECK(r.bins == 2);  // the tiny category joined the smallest bin
  CHECK(r.p_value > 0.9);
  CHECK(chi_square_test(std::vector<double>{0.5, 0.5, 0.0}, std::vector<long>{5, 5, 1}).p_value ==
        0.0);
  CHECK_THROWS_WITH(chi_square_test(e, std::vector<long>{1, 2}), Catch::Contains("counts"));
}

TEST_CASE("bad input: a draft with another vocabulary, K < 1, a bad tree shape",
          "[unit][speculative]") {
  const Model target_model = make_synthetic_model("stories260K");
  ModelConfig other = named_config("stories260K");
  other.vocab_size = 600;
  const Model other_model = make_synthetic_model(other, {}, "other-vocab");
  SpecModel target(target_model), draft(other_model);
  SamplingParams p;
  DraftModelProposer proposer(draft, p, 2, "draft");
  CHECK_THROWS_WITH(SpeculativeDecoder(target, proposer, p),
                    Catch::Contains("600") && Catch::Contains("512"));
  CHECK_THAT(printed_error([&] { DraftModelProposer(target, p, 0, "draft"); }),
             Catch::Contains("--k 0"));
  CHECK_THAT(printed_error([&] { TreeProposer(target, p, 0, 3); }),
             Catch::Contains("--tree-branch 0"));
  CHECK_THAT(printed_error([&] { TreeProposer(target, p, 2, 0); }),
             Catch::Contains("--tree-depth 0"));
  CHECK_THROWS_WITH(TreeProposer(target, p, 2, 0), !Catch::Contains("--"));
  CHECK_THROWS_WITH(TreeProposer(target, p, 16, 4), Catch::Contains("4096"));
  const std::vector<int> prompt = {1, 2, 3};
  CHECK_THROWS_WITH(plain_generate(target, prompt, 2, p, std::vector<int>{kBosToken}),
                    Catch::Contains("steps"));

  // Storage: a negative block size, a capacity beyond the context, a forward past capacity.
  SpecModelOptions bad;
  bad.block_size = -1;
  CHECK_THAT(printed_error([&] { SpecModel(target_model, bad); }),
             Catch::Contains("--block-size -1"));
  CHECK_THROWS_WITH(SpecModel(target_model, bad), !Catch::Contains("--"));
  SpecModelOptions too_long;
  too_long.capacity = target_model.config().seq_len + 1;
  CHECK_THROWS_WITH(SpecModel(target_model, too_long), Catch::Contains("capacity"));
  SpecModelOptions small;
  small.capacity = 6;
  small.block_size = 4;  // two blocks, 8 rows, but the sequence may hold only 6 positions
  SpecModel tiny(target_model, small);
  CHECK(tiny.capacity() == 6);
  std::vector<float> logits;
  const std::vector<int> seven = {1, 2, 3, 4, 5, 6, 7};
  CHECK_THROWS_WITH(tiny.forward(seven, LogitsMode::last, logits),
                    Catch::Contains("beyond the cache's 6 positions"));
  CHECK(tiny.allocator()->num_used() == 0);
}
